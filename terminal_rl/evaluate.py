"""Evaluate a policy on a task set (Hydra app).

    python -m terminal_rl.evaluate policy=litellm policy.model=openai/qwen3-8b attempts=4
    python -m terminal_rl.evaluate policy=oracle task_set.format=harbor task_set.path=DIR   validate a task set
    python -m terminal_rl.evaluate agent=terminus_json policy=token policy.tokenizer=/ckpt/hf
    python -m terminal_rl.evaluate policy=token serve=vllm serve.model=outputs/RUN/hf/global_step_200 \
        launcher=slurm hardware=h100_8x serve.tensor_parallel=8       a trained checkpoint, served in the job

Writes one trajectory per line to ``results_file`` (reruns resume) and a summary beside it.
"""

from __future__ import annotations

import functools
import importlib
from collections import Counter

import hydra
from omegaconf import DictConfig, OmegaConf

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.evaluation import (
    EvaluationPlan,
    build_images,
    evaluate,
    pending_pairs,
    print_summary,
    read_results,
    summarize,
    write_summary,
)
from terminal_rl.agent.policies import make_policy
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.config import project_path, to_dataclass
from terminal_rl.console import Console, print_header, task_counts
from terminal_rl.launch.served import ServedJob, launch_app
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.build_report import failure_line
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.tasks.model import Difficulty
from terminal_rl.tasks.prepare import train_and_val
from terminal_rl.tasks.task_set import load_valid_tasks, task_set_config
from terminal_rl.training.job import HardwareConfig


def select_tasks(cfg: DictConfig):
    task_set = task_set_config(cfg.task_set)
    tasks = load_valid_tasks(task_set)
    if cfg.split != "all":
        train, val, _ = train_and_val(task_set)  # the training run's own splits
        tasks = {"train": train, "val": val}[cfg.split]
    if cfg.task_ids:
        missing = sorted(set(cfg.task_ids) - {t.id for t in tasks})
        if missing:
            raise ValueError(f"task_ids {missing} are not valid tasks of task_set {task_set.path}")
        tasks = [t for t in tasks if t.id in set(cfg.task_ids)]
    return tasks


def header_rows(cfg: DictConfig, tasks: list, policy) -> list[tuple[str, str]]:
    """The header's tasks, policy and agent lines (shared with the filter app)."""
    counted = Counter(task.difficulty for task in tasks)
    counts = {level.value: counted[level] for level in Difficulty if counted[level]}
    return [
        ("tasks", task_counts(cfg.task_set.path, {cfg.split: counts})),
        ("policy", policy.name if policy is not None else "oracle: each task's own solution script"),
        ("agent", f"protocol {cfg.agent.protocol}, history {cfg.agent.history}"),
    ]


async def run_plan(plan: EvaluationPlan, factory: SandboxFactory, cfg: DictConfig, policy, console: Console) -> None:
    """The plan's pending episodes: their task images first, then the episodes, each with a progress bar."""
    agent = AgentConfig.from_node(cfg.agent)
    # Beside the results: a training run's own image report (the tasks it parks) stays its own.
    report = plan.results_file.with_name("image_builds.json")
    needed = list({task.id: task for task, _ in pending_pairs(plan)}.values())
    for outcome in await build_images(needed, factory, report, factory.config.build.jobs, console.rich):
        console.print(f"{failure_line(outcome)}; its episodes end as sandbox errors; see {report}")
    await evaluate(plan, factory, make_protocol(agent.protocol), policy, agent.limits, console.rich)


async def run(cfg: DictConfig, console: Console) -> dict:
    tasks = select_tasks(cfg)
    plan = EvaluationPlan(tasks, cfg.attempts, cfg.concurrency, project_path(cfg.results_file))
    policy = None if cfg.policy.kind == "oracle" else make_policy(cfg.policy, AgentConfig.from_node(cfg.agent))
    run_context = RunContext.from_config(cfg.run)
    print_header(
        console,
        "evaluate",
        run_context,
        [
            *header_rows(cfg, tasks, policy),
            ("attempts", f"{cfg.attempts} per task, {cfg.concurrency} episodes at once"),
            ("results", str(plan.results_file)),
        ],
    )
    if policy is None:
        unsolved = [task.id for task in tasks if task.solution is None]
        if unsolved and len(unsolved) == len(tasks):
            raise ValueError(
                f"policy=oracle runs each task's solution script, and none of the {len(tasks)} tasks of "
                f"task_set {cfg.task_set.path} has one (the Terminal-Bench-RL CSV ships none); "
                "evaluate a Harbor or Terminal-Bench task set, or choose another policy"
            )
        if unsolved:
            console.print(
                f"{len(unsolved)} of {len(tasks)} tasks have no solution script and score nothing "
                f"(e.g. {', '.join(unsolved[:3])})"
            )
    async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), run_context) as factory:
        await run_plan(plan, factory, cfg, policy, console)
    summary = summarize(read_results(plan.results_file))
    print_summary(summary, console.rich)
    write_summary(summary, plan.results_file.with_name("summary.json"))
    console.print(f"results: {plan.results_file}")
    return summary


def served_job(app: str, cfg: DictConfig) -> ServedJob:
    """The app (``terminal_rl.<app>.run(cfg, console)``) as the launcher runs it: here, or as a Slurm
    job with its policy server beside it, its config resolved first (it runs elsewhere, later). The
    app's ``run`` is taken from its module by name, so a Slurm job pickles it by reference even when
    the app runs as ``__main__``."""
    slurm = cfg.launcher.kind == "slurm"
    if slurm:
        OmegaConf.resolve(cfg)
    return ServedJob(
        app=app,
        work=functools.partial(importlib.import_module(f"terminal_rl.{app}").run, cfg),
        run=RunContext.from_config(cfg.run),
        launcher=cfg.launcher,
        hardware=to_dataclass(cfg.hardware, HardwareConfig) if slurm else None,
        docker_host=SandboxConfig.from_node(cfg.sandbox).docker_host,
        serve=cfg.serve,
        policy_kind=cfg.policy.kind,
        policy_base_url=cfg.policy.get("base_url", ""),
        verbose=bool(cfg.verbose),
    )


@hydra.main(config_path="../conf", config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    launch_app(served_job("evaluate", cfg))


if __name__ == "__main__":
    main()
