"""What a task's reference solution changes: the files the forged-fixture guard may not hold against
an episode (``terminal_rl/rewards/fixture_guard.py``), measured once per task version.

The solution runs as the agent in a fresh sandbox of the task and is verified, exactly as
``evaluate policy=oracle`` runs it (``run_oracle``); its changes are the verification's diff and
rewritten start files. Kept in ``<directory>/<content hash>.json`` (the run's shared directory), so
every rollout worker, node and resumed run reuses one measurement; within a process, concurrent
requests for a task share one. None when the task has no solution, or its solution does not score
1.0 (then nothing tells an intended edit from a forged one), or the measurement failed (retried on
the next request).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from terminal_rl.agent.evaluation import run_oracle
from terminal_rl.agent.trajectory import Termination
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import changed_files
from terminal_rl.tasks.model import Task


class ReferenceChanges:
    def __init__(self, factory: SandboxFactory, directory: Path):
        self._factory = factory
        self._directory = directory
        self._measuring: dict[str, asyncio.Future] = {}

    async def of(self, task: Task) -> list[str] | None:
        """The sorted paths ``task``'s reference solution changes, or None (see above)."""
        if task.solution is None:
            return None
        stored = self._directory / f"{task.content_hash}.json"
        if stored.is_file():
            return json.loads(stored.read_text(encoding="utf-8"))["changes"]
        if task.content_hash not in self._measuring:
            self._measuring[task.content_hash] = asyncio.ensure_future(self._measure(task, stored))
        return await asyncio.shield(self._measuring[task.content_hash])

    async def _measure(self, task: Task, stored: Path) -> list[str] | None:
        try:
            trajectory = await run_oracle(task, self._factory, "reference")
        except BaseException:
            del self._measuring[task.content_hash]  # measure again next time
            raise
        verification = trajectory.verification
        if (
            verification is None
            or Termination(trajectory.termination).infrastructure
            or verification["infrastructure_error"]
        ):
            del self._measuring[task.content_hash]  # the environment failed: measure again next time
            return None
        changes = sorted(changed_files(verification)) if verification["score"] == 1.0 else None
        stored.parent.mkdir(parents=True, exist_ok=True)
        partial = stored.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(
            json.dumps({"task_id": task.id, "changes": changes, "score": verification["score"]}), encoding="utf-8"
        )
        partial.replace(stored)
        return changes
