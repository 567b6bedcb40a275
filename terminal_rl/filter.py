"""Offline data filter (Hydra app): run a policy k times per task and keep the tasks it can learn from.

    python -m terminal_rl.filter policy=litellm policy.model=openai/qwen3-8b policy.base_url=http://127.0.0.1:8000/v1
    python -m terminal_rl.filter policy=scripted policy.script=script.json task_set=tbrl_smoke
    python -m terminal_rl.filter policy=token serve=vllm serve.model=/models/qwen3-8b launcher=slurm hardware=h100_8x

Writes the keep-list training reads (``data_filter.keep_list``), each task's k scores and its no-op
baseline (the tests on the untouched environment). Attempts are cached per (task content hash,
policy, k), so a rerun only runs what changed.
"""

from __future__ import annotations

import re
import time

import hydra
from omegaconf import DictConfig
from rich.table import Table

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.evaluation import EvaluationPlan, read_results
from terminal_rl.agent.policies import make_policy
from terminal_rl.agent.trajectory import Termination
from terminal_rl.config import project_path
from terminal_rl.console import Console, print_header
from terminal_rl.evaluate import header_rows, run_plan, select_tasks, served_job
from terminal_rl.filtering.keep_list import write_keep_list
from terminal_rl.filtering.pass_rate import decide, summary
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify


async def noop_baseline(task, factory: SandboxFactory) -> float | None:
    """The task's test score with nothing done (None when the environment does not come up)."""
    try:
        async with factory.task_sandbox(task, "noop") as sandbox:
            return (await verify(sandbox, task)).score
    except Exception:  # an environment that does not build is reported by the attempts themselves
        return None


async def run(cfg: DictConfig, console: Console) -> dict:
    tasks = select_tasks(cfg)
    k = int(cfg.data_filter.attempts)
    policy = make_policy(cfg.policy, AgentConfig.from_node(cfg.agent))
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", policy.name)
    results = project_path(cfg.run.output_root) / "filters" / "pass_rate" / f"{slug}-k{k}.jsonl"
    run_context = RunContext.from_config(cfg.run)
    keep_list = project_path(cfg.data_filter.keep_list)
    print_header(
        console,
        "filter",
        run_context,
        [
            *header_rows(cfg, tasks, policy),
            (
                "keeps",
                f"tasks whose mean score over k={k} attempts is in [{cfg.data_filter.min_mean}, "
                f"{cfg.data_filter.max_mean}], {cfg.concurrency} episodes at once",
            ),
            ("keep-list", str(keep_list)),
        ],
    )
    started = time.monotonic()
    async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), run_context) as factory:
        await run_plan(EvaluationPlan(tasks, k, cfg.concurrency, results), factory, cfg, policy, console)
        baselines = {task.id: await noop_baseline(task, factory) for task in tasks}
    hashes = {task.id: task.content_hash for task in tasks}
    attempts: dict[str, list[float]] = {task.id: [] for task in tasks}
    durations = []
    for trajectory in read_results(results):
        if (
            hashes.get(trajectory.task_id) == trajectory.content_hash
            and trajectory.score is not None
            and not Termination(trajectory.termination).infrastructure
        ):
            attempts[trajectory.task_id].append(trajectory.score)
            durations.append(trajectory.duration_sec)
    verdicts = [
        decide(t, s, baselines[t], cfg.data_filter.min_mean, cfg.data_filter.max_mean) for t, s in attempts.items()
    ]
    figures = summary(verdicts, sum(durations) / len(durations) if durations else 0.0)
    write_keep_list(
        keep_list,
        [v.task_id for v in verdicts if v.keep],
        {v.task_id: v.reason for v in verdicts if not v.keep},
        {
            "policy": policy.name,
            "attempts": k,
            "summary": dict(figures),
            "tasks": {v.task_id: {"scores": list(v.scores), "noop_baseline": v.baseline} for v in verdicts},
        },
    )
    table = Table(title=f"pass_rate filter: {policy.name}, k={k}")
    for column in ("task", "scores", "no-op", "keep", "why"):
        table.add_column(column)
    for v in verdicts:
        table.add_row(
            v.task_id,
            " ".join(f"{s:.2f}" for s in v.scores),
            "-" if v.baseline is None else f"{v.baseline:.2f}",
            "yes" if v.keep else "no",
            v.reason,
        )
    console.rich.print(table)
    console.print(
        f"kept {figures['kept']}/{figures['tasks']}; training skips {figures['saved_fraction']:.0%} of its "
        f"rollouts (about that share of rollout GPU time); filter took {time.monotonic() - started:.0f}s; "
        f"keep-list: {keep_list}"
    )
    return dict(figures)


@hydra.main(config_path="../conf", config_name="filter", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.launch.served import launch_app

    launch_app(served_job("filter", cfg))


if __name__ == "__main__":
    main()
