"""Build every task image of a task set and report which build and why the others do not.

    python -m terminal_rl.sandbox command=build [only=[ID,...]] [report=FILE] [overrides]

Each failure carries its cause, read from the build log (``build_failures.py``); a new attempt of the
run builds again the tasks whose cause may pass on another try.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.build_failures import classify, is_transient
from terminal_rl.sandbox.images.images import ImageBuildError, TaskImages
from terminal_rl.sandbox.runtime.docker_client import AsyncDocker, docker_client
from terminal_rl.tasks.model import Task


@dataclass(frozen=True)
class BuildOutcome:
    task_id: str
    ok: bool
    cached: bool
    duration_sec: float
    image: str = ""
    reason: str = ""
    category: str = ""
    log_tail: str = ""


async def build_all(
    images: TaskImages,
    tasks: list[Task],
    report_path: Path,
    jobs: int = 1,
    progress=None,
    discard: bool = False,
    known: list[BuildOutcome] = (),
    total: int | None = None,
) -> list[BuildOutcome]:
    """Build ``tasks`` with ``jobs`` builds at once, rewriting the JSON report after each one (with the
    ``known`` outcomes of earlier builds of the same set of ``total`` tasks).

    ``discard`` removes each image once built: a report over hundreds of tasks needs only the
    outcome, and their images together need more disk than most nodes have.
    """
    outcomes: list[BuildOutcome] = list(known)
    total = total or len(tasks)
    slots = asyncio.Semaphore(jobs)

    async def one(task: Task) -> None:
        async with slots:
            started = time.monotonic()
            try:
                built = await images.ensure(task)
                outcome = BuildOutcome(task.id, True, built.cached, time.monotonic() - started, built.image)
                if discard:
                    await images.remove(built.image)
            except ImageBuildError as error:
                outcome = BuildOutcome(
                    task.id,
                    False,
                    False,
                    time.monotonic() - started,
                    reason=error.reason,
                    category=classify(error.reason, error.log_tail),
                    log_tail=error.log_tail,
                )
            outcomes.append(outcome)
            write_report(outcomes, total, report_path)
            if progress:
                progress(outcome)

    await asyncio.gather(*(one(task) for task in tasks))
    return outcomes[len(known) :]


def build_on_this_engine(
    sandbox: SandboxConfig,
    lock_dir: Path,
    tasks: list[Task],
    report_path: Path,
    jobs: int,
    progress=None,
    discard: bool = False,
) -> list[BuildOutcome]:
    """``build_all`` through this node's engine (``sandbox.docker_host``), its client closed after."""
    docker = AsyncDocker(docker_client(sandbox.docker_host), max(sandbox.docker_threads, jobs))
    try:
        return asyncio.run(
            build_all(TaskImages(docker, sandbox.build, lock_dir), tasks, report_path, jobs, progress, discard)
        )
    finally:
        docker.close()


def outcome_line(outcome: BuildOutcome) -> str:
    """One progress line for a finished build: the task, cached / built / failed and the time."""
    status = "cached" if outcome.cached else ("built" if outcome.ok else f"FAILED ({outcome.category})")
    return f"{outcome.task_id}: {status} in {outcome.duration_sec:.0f}s"


def failure_line(outcome: BuildOutcome) -> str:
    """One console line for a failed build: the task, the cause and the start of the reason."""
    reason = " ".join(outcome.reason.split())[:160]
    return f"task {outcome.task_id}: its image does not build ({outcome.category}: {reason})"


@contextlib.contextmanager
def build_progress(console: Console | None, total: int) -> Iterator[Callable[[BuildOutcome], None]]:
    """A ``task images`` progress bar on ``console`` (none when None); yields ``build_all``'s
    ``progress`` callback."""
    columns = (
        TextColumn("task images"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console or Console(), disable=console is None, transient=False) as progress:
        bar = progress.add_task("", total=total)

        def advance(outcome: BuildOutcome) -> None:
            state = "built" if outcome.ok else f"FAILED ({outcome.category})"
            progress.update(bar, advance=1, description=f"{outcome.task_id}: {state}")

        yield advance


def write_report(outcomes: list[BuildOutcome], total: int, path: Path) -> None:
    failed = [o for o in outcomes if not o.ok]
    summary = {
        "tasks": total,
        "attempted": len(outcomes),
        "built": len(outcomes) - len(failed),
        "failed": len(failed),
        "failed_by_category": dict(Counter(o.category for o in failed).most_common()),
        "outcomes": [asdict(o) for o in sorted(outcomes, key=lambda o: o.task_id)],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, text in ((path, json.dumps(summary, indent=2) + "\n"), (path.with_suffix(".md"), markdown(summary))):
        partial = target.with_name(
            f".{target.name}.partial-{os.getpid()}"
        )  # readers (the trainer) see whole files only
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)


def failed_tasks(path: Path) -> dict[str, str]:
    """Task id -> why its image did not build, from a report (none yet: nothing failed)."""
    if not path.is_file():
        return {}
    outcomes = json.loads(path.read_text(encoding="utf-8"))["outcomes"]
    return {o["task_id"]: f"{o['category']}: {o['reason']}" for o in outcomes if not o["ok"]}


def forget_transient_failures(path: Path) -> list[str]:
    """Drop from a report the failures trying again may fix (a download, a timeout, the engine); a new
    attempt of the run (resume, requeue) then builds those tasks again instead of leaving them out for
    good. Returns their task ids."""
    if not path.is_file():
        return []
    summary = json.loads(path.read_text(encoding="utf-8"))
    outcomes = [BuildOutcome(**o) for o in summary["outcomes"]]
    forgotten = [o.task_id for o in outcomes if not o.ok and is_transient(o.category)]
    if forgotten:
        write_report([o for o in outcomes if o.task_id not in forgotten], summary["tasks"], path)
    return forgotten


def markdown(summary: dict) -> str:
    """The report as a readable page: counts, then every failed task with its category and reason."""
    lines = [
        f"# Task image builds: {summary['built']} of {summary['attempted']} built "
        f"({summary['tasks']} tasks in the set)",
        "",
        "| category | tasks |",
        "| --- | --- |",
    ]
    lines += [f"| {category} | {n} |" for category, n in summary["failed_by_category"].items()]
    lines += ["", "| task | category | reason |", "| --- | --- | --- |"]
    for outcome in summary["outcomes"]:
        if not outcome["ok"]:
            reason = re.sub(r"\s+", " ", outcome["reason"])[:160].replace("|", "/")
            lines.append(f"| {outcome['task_id']} | {outcome['category']} | {reason} |")
    return "\n".join(lines) + "\n"
