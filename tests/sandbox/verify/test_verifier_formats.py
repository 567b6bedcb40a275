"""One verifier for every format: tasks of the shared CSV exported to Harbor (test.sh, weights file)
give the same per-test outcomes and score for the same no-op episode as their weighted-pytest
originals."""

import asyncio
import re

import pytest

from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor

pytestmark = pytest.mark.docker

# Tasks whose images build here without the network (no package installs): quick to build.
QUIET = re.compile(r"pip|apt|curl|wget|npm|git clone|cargo|go get|gem ")
TASKS = 10


def test_exported_tasks_verify_like_their_originals(tasks, sandbox_config, run_context, tmp_path):
    chosen = sorted(
        (t for t in tasks.values() if t.environment.dockerfile and not QUIET.search(t.environment.dockerfile)),
        key=lambda t: t.id,
    )[:TASKS]
    exported = {t.id: load_harbor(export_harbor(t, tmp_path), t.limits).tasks[0] for t in chosen}

    async def main():
        slots = asyncio.Semaphore(4)
        async with SandboxFactory(sandbox_config, run_context) as factory:

            async def both(task):
                async with slots, factory.task_sandbox(task) as sandbox:
                    return await verify(sandbox, task), await verify(sandbox, exported[task.id])

            return await asyncio.gather(*(both(task) for task in chosen))

    results = asyncio.run(main())
    assert len(results) == TASKS
    for task, (original, harbor) in zip(chosen, results):
        assert not original.infrastructure_error and not harbor.infrastructure_error, task.id
        assert harbor.outcomes == original.outcomes and harbor.score == original.score, task.id
        assert harbor.task_reward == pytest.approx(original.score), f"{task.id}: the exported test.sh agrees"
