"""Evaluation: a task set x a policy x n attempts -> one trajectory per line, and a summary.

Resumable: finished (task, attempt) pairs already in the results file are skipped. ``oracle`` runs
each task's own solution script instead of a model, to validate a task set.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from math import comb
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from terminal_rl.agent.episode import INFRASTRUCTURE_ERRORS, EpisodeLimits
from terminal_rl.agent.metrics import behaviour_metrics
from terminal_rl.agent.policies.base import Policy
from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.agent.runner import run_episode
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.sandbox.images.build_report import BuildOutcome, build_all, build_progress
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.model import Task


@dataclass(frozen=True)
class EvaluationPlan:
    tasks: list[Task]
    attempts: int
    concurrency: int
    results_file: Path


def pending_pairs(plan: EvaluationPlan) -> list[tuple[Task, int]]:
    """(task, attempt) pairs not yet in the results file: never run, or last run into an
    infrastructure failure (engine, policy endpoint), which a rerun tries again. A result for another
    version of a task, by content hash, does not count."""
    hashes = {task.id: task.content_hash for task in plan.tasks}
    done = {
        (t.task_id, t.metadata.get("attempt"))
        for t in read_results(plan.results_file)
        if hashes.get(t.task_id) == t.content_hash and not _infrastructure_failure(t)
    }
    return [
        (task, attempt) for task in plan.tasks for attempt in range(plan.attempts) if (task.id, attempt) not in done
    ]


def _infrastructure_failure(trajectory: Trajectory) -> bool:
    return trajectory.score is None and Termination(trajectory.termination).infrastructure


def read_results(path: Path) -> list[Trajectory]:
    """The results file's episodes; an attempt run again (its earlier run failed on infrastructure)
    counts once, as its last run."""
    if not path.is_file():
        return []
    latest: dict[tuple, Trajectory] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = Trajectory.from_json(line)
            latest[(t.task_id, t.content_hash, t.metadata.get("attempt"))] = t
    return list(latest.values())


async def build_images(
    tasks: list[Task], factory: SandboxFactory, report_path: Path, jobs: int, console: Console
) -> list[BuildOutcome]:
    """Build the tasks' images before any episode, with a progress bar; returns the failures (their
    episodes end as sandbox errors at once: a failed build is not tried again)."""
    with build_progress(console, len(tasks)) as advance:
        outcomes = await build_all(factory.images, tasks, report_path, jobs, advance)
    return [o for o in outcomes if not o.ok]


async def evaluate(
    plan: EvaluationPlan,
    factory: SandboxFactory,
    protocol: ActionProtocol,
    policy: Policy | None,
    limits: EpisodeLimits,
    console: Console | None = None,
) -> list[Trajectory]:
    """Run the pending pairs (``policy`` None: oracle mode), appending each trajectory as it ends."""
    pairs = pending_pairs(plan)
    plan.results_file.parent.mkdir(parents=True, exist_ok=True)
    slots = asyncio.Semaphore(plan.concurrency)
    finished: list[Trajectory] = []
    with Progress(console=console or Console(), transient=False) as progress, plan.results_file.open("a") as out:
        bar = progress.add_task(f"{len(pairs)} episodes", total=len(pairs))

        async def one(task: Task, attempt: int) -> None:
            async with slots:
                rollout_id = f"{task.id}-{attempt}"
                if policy is None:
                    trajectory = await run_oracle(task, factory, rollout_id)
                else:
                    trajectory = await run_episode(task, factory, protocol, policy, limits, rollout_id)
            trajectory.metadata.update(attempt=attempt, behaviour=behaviour_metrics(trajectory))
            out.write(trajectory.to_json() + "\n")
            out.flush()
            finished.append(trajectory)
            progress.advance(bar)

        await asyncio.gather(*(one(task, attempt) for task, attempt in pairs))
    return finished


async def run_oracle(task: Task, factory: SandboxFactory, rollout_id: str) -> Trajectory:
    """Run the task's solution script as the agent, then verify."""
    trajectory = Trajectory(task.id, task.content_hash, "oracle", "oracle", started_at=time.time())
    if task.solution is None:
        trajectory.termination, trajectory.termination_detail = Termination.FINISHED.value, "no solution script"
        return trajectory
    try:
        async with factory.task_sandbox(task, rollout_id) as sandbox:
            result = await sandbox.run(task.solution, timeout=task.limits.agent_timeout_sec)
            trajectory.termination = Termination.FINISHED.value
            trajectory.termination_detail = f"solution exit code {result.exit_code}"
            trajectory.verification = (await verify(sandbox, task)).to_dict()
    except INFRASTRUCTURE_ERRORS as error:
        trajectory.termination, trajectory.termination_detail = Termination.SANDBOX_ERROR.value, str(error)
    trajectory.duration_sec = time.time() - trajectory.started_at
    return trajectory


def pass_at_k(n: int, correct: int, k: int) -> float:
    """Unbiased pass@k from n attempts with ``correct`` passes (Chen et al., 2021)."""
    if n - correct < k:
        return 1.0
    return 1.0 - comb(n - correct, k) / comb(n, k)


def summarize(trajectories: list[Trajectory]) -> dict:
    """Pass rate (score 1), mean score, pass@k, failure modes, loops, cost and latency."""
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for trajectory in trajectories:
        by_task[trajectory.task_id].append(trajectory)
    scored = [t for t in trajectories if t.score is not None]
    attempts = min((len(v) for v in by_task.values()), default=0)
    summary = {
        "episodes": len(trajectories),
        "tasks": len(by_task),
        "pass_rate": sum(t.score == 1.0 for t in scored) / len(scored) if scored else 0.0,
        "mean_score": sum(t.score for t in scored) / len(scored) if scored else 0.0,
        "pass_at_k": {
            k: sum(pass_at_k(len(v), sum(t.score == 1.0 for t in v), k) for v in by_task.values()) / len(by_task)
            for k in range(1, attempts + 1)
        },
        "terminations": dict(Counter(t.termination for t in trajectories).most_common()),
        "loops": sum(t.metadata.get("behaviour", {}).get("loop", 0.0) for t in trajectories),
        "cost_usd": sum(t.metadata.get("cost_usd", 0.0) for t in trajectories),
        "mean_duration_sec": sum(t.duration_sec for t in trajectories) / len(trajectories) if trajectories else 0.0,
        "per_task": {task: [t.score for t in v] for task, v in sorted(by_task.items())},
    }
    return summary


def print_summary(summary: dict, console: Console) -> None:
    table = Table(title=f"{summary['episodes']} episodes over {summary['tasks']} tasks")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("pass rate (score = 1)", f"{summary['pass_rate']:.3f}")
    table.add_row("mean score", f"{summary['mean_score']:.3f}")
    for k, value in summary["pass_at_k"].items():
        table.add_row(f"pass@{k}", f"{value:.3f}")
    for reason, n in summary["terminations"].items():
        table.add_row(f"ended: {reason}", str(n))
    table.add_row("loops detected", f"{summary['loops']:.0f}")
    table.add_row("cost (USD)", f"{summary['cost_usd']:.4f}")
    table.add_row("mean episode time (s)", f"{summary['mean_duration_sec']:.1f}")
    console.print(table)


def write_summary(summary: dict, path: Path) -> None:
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
