"""Evaluate a policy on a task set (Hydra app).

    python -m terminal_rl.evaluate policy=litellm policy.model=openai/qwen3-8b attempts=4
    python -m terminal_rl.evaluate policy=oracle task_set=tbrl
    python -m terminal_rl.evaluate agent=terminus_json policy=token policy.tokenizer=/ckpt/hf
    python -m terminal_rl.evaluate policy=token serve=vllm serve.model=outputs/RUN/hf/global_step_200 \
        launcher=slurm hardware=h100_8x serve.tensor_parallel=8       a trained checkpoint, served in the job

Writes one trajectory per line to ``results_file`` (reruns resume) and a summary beside it.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig
from rich.console import Console

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.evaluation import EvaluationPlan, evaluate, print_summary, read_results, summarize, write_summary
from terminal_rl.agent.policies import make_policy
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.config import project_path
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.tasks.splits import split_by_difficulty
from terminal_rl.tasks.task_set import load_task_set, task_set_config
from terminal_rl.tasks.validation import validate_tasks


def select_tasks(cfg: DictConfig):
    task_set = task_set_config(cfg.task_set)
    loaded = load_task_set(task_set)
    tasks = validate_tasks(loaded.tasks, loaded.problems).valid
    if cfg.split != "all":
        train, val = split_by_difficulty(tasks, task_set.val_fraction, task_set.split_seed)
        tasks = {"train": train, "val": val}[cfg.split]
    if cfg.task_ids:
        missing = sorted(set(cfg.task_ids) - {t.id for t in tasks})
        if missing:
            raise ValueError(f"task_ids {missing} are not valid tasks of task_set {task_set.path}")
        tasks = [t for t in tasks if t.id in set(cfg.task_ids)]
    return tasks


async def run(cfg: DictConfig) -> dict:
    console = Console()
    plan = EvaluationPlan(select_tasks(cfg), cfg.attempts, cfg.concurrency, project_path(cfg.results_file))
    agent = AgentConfig.from_node(cfg.agent)
    policy = None if cfg.policy.kind == "oracle" else make_policy(cfg.policy, agent.history)
    async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), RunContext.from_config(cfg.run)) as factory:
        await evaluate(plan, factory, make_protocol(agent.protocol), policy, agent.limits, console)
    summary = summarize(read_results(plan.results_file))
    print_summary(summary, console)
    write_summary(summary, plan.results_file.with_name("summary.json"))
    console.print(f"results: {plan.results_file}")
    return summary


@hydra.main(config_path="../conf", config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.launch.served import launch_app

    launch_app("evaluate", cfg)


if __name__ == "__main__":
    main()
