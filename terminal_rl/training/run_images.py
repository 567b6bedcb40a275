"""A training run's task images, so one task whose image cannot build never stops the run.

Before step 1 the images the run needs first are built, with a progress bar: the validation rows and
the sampler's first draws (predicted exactly: draws are a pure function of the seed and the pool, see
``curriculum/sampler.py``). A task whose image does not build is recorded in the run's image report
with its reason; the curriculum then leaves it out of the sampling pool and the validation rows, and
the draws are predicted again without it (a failure that may pass on another try, such as a
download, is tried again by the next attempt of the run: resume or requeue). The remaining images build in a
background thread during
training, one at a time, while the node keeps ``hardware.min_free_disk_gb`` free; a rollout that meets
an image not built yet builds it itself (one build per image, under its lock).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence

from rich.console import Console

from terminal_rl.config import free_disk_bytes
from terminal_rl.curriculum.sampler import TaskSampler
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.build_report import (
    BuildOutcome,
    build_all,
    build_progress,
    failed_tasks,
    forget_transient_failures,
)
from terminal_rl.sandbox.images.images import TaskImages
from terminal_rl.sandbox.runtime.docker_client import AsyncDocker, docker_client
from terminal_rl.tasks.model import Task


def first_needed(
    difficulties: Mapping[str, str],
    val_ids: Sequence[str],
    mix: Mapping[str, float],
    seed: int,
    draws: int,
    keep: frozenset[str] | None,
    unavailable: frozenset[str],
) -> list[str]:
    """Task ids the run uses first, in order, without repeats: the validation rows, then the first
    ``draws`` training draws of a fresh sampler (pure)."""
    sampler = TaskSampler(difficulties, seed=seed, keep=keep, unavailable=unavailable)
    drawn = sampler.draw_batch(mix, draws) if sampler.pool() else []
    ordered = [t for t in val_ids if t not in unavailable] + drawn
    return list(dict.fromkeys(ordered))


class RunImages:
    """Builds one run's task images on this node and keeps the run's image report."""

    def __init__(self, sandbox: SandboxConfig, run: RunContext, tasks: list[Task], min_free_disk_gb: float):
        self.sandbox = sandbox
        self.min_free_disk_gb = min_free_disk_gb
        self.run = run
        self.tasks = {task.id: task for task in tasks}
        self.outcomes: dict[str, BuildOutcome] = {}
        self._thread: threading.Thread | None = None
        # This attempt builds again what an earlier one could not for a reason that may pass.
        self.retried = forget_transient_failures(run.image_report)

    def unavailable(self) -> frozenset[str]:
        return frozenset(failed_tasks(self.run.image_report))

    def build(self, ids: Sequence[str], console: Console | None = None, jobs: int = 1) -> list[BuildOutcome]:
        """Build the images of ``ids`` not built yet (a progress bar on ``console``)."""
        pending = [self.tasks[i] for i in ids if i not in self.outcomes]
        if not pending:
            return []
        with build_progress(console, len(pending)) as advance:
            return asyncio.run(self._build(pending, jobs, advance))

    def build_first(self, predict, console: Console | None, jobs: int) -> list[BuildOutcome]:
        """Build what ``predict(unavailable)`` says the run needs first, again after each failure
        (the draws change once a task leaves the pool). Returns the failed outcomes."""
        failed: list[BuildOutcome] = []
        while True:
            new = self.build(predict(self.unavailable()), console, jobs)
            failed += [o for o in new if not o.ok]
            if not any(not o.ok for o in new):
                return failed

    def build_rest_in_background(self) -> None:
        """Build every other task's image in a daemon thread, one at a time, stopping before the disk
        under the node-local root falls below ``hardware.min_free_disk_gb``."""
        rest = [task for task_id, task in sorted(self.tasks.items()) if task_id not in self.outcomes]
        if rest:
            self._thread = threading.Thread(
                target=lambda: asyncio.run(self._build(rest, 1, None, check_disk=True)), name="task-images", daemon=True
            )
            self._thread.start()

    async def _build(self, tasks: list[Task], jobs: int, progress, check_disk: bool = False) -> list[BuildOutcome]:
        docker = AsyncDocker(
            docker_client(self.sandbox.docker_host, self.sandbox.docker_threads), self.sandbox.docker_threads
        )
        images = TaskImages(docker, self.sandbox.build, self.run.image_lock_dir)
        new: list[BuildOutcome] = []
        try:
            for start in range(0, len(tasks), jobs):
                if check_disk and self._disk_low():
                    break
                batch = await build_all(
                    images,
                    tasks[start : start + jobs],
                    self.run.image_report,
                    jobs,
                    progress,
                    known=list(self.outcomes.values()),
                    total=len(self.tasks),
                )
                self.outcomes.update({o.task_id: o for o in batch})
                new += batch
        finally:
            docker.close()
        return new

    def _disk_low(self) -> bool:
        return free_disk_bytes(self.run.node_local_dir) / 2**30 < self.min_free_disk_gb
