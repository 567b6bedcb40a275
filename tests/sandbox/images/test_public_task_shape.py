"""Public Harbor task sets build offline: a fixture in the shape of a public generated set (a dated
t-bench Ubuntu or Python FROM, `ln -s /usr/bin/python3 /usr/bin/python`, pip with
--break-system-packages, pinned test dependencies, test.sh that runs pytest) gets its base images
from our recipes, builds, and verifies: a no-op scores 0, the reference solution 1."""

import asyncio

import pytest
from docker.errors import ImageNotFound

from terminal_rl.agent.evaluation import run_oracle
from terminal_rl.sandbox.images.base_images import bootstrap_base_images
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.dockerfile import task_set_images
from terminal_rl.tasks.loaders.harbor import load_harbor
from tests.conftest import FIXTURES

pytestmark = pytest.mark.docker


def test_public_shaped_tasks_build_offline_and_verify(sandbox_config, run_context, default_limits):
    tasks = load_harbor(FIXTURES / "harbor_public", default_limits).tasks
    references = task_set_images(tasks)
    assert references == [
        "ghcr.io/laude-institute/t-bench/python-3-13:20250101",
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624",
    ]
    client = docker_client(sandbox_config.docker_host)
    for reference in references:  # as on a machine that has never seen these tags
        try:
            client.images.remove(reference)
        except ImageNotFound:
            pass
    tagged, unmatched = bootstrap_base_images(client, sandbox_config.base_images, references, run_context.scratch_dir)
    assert tagged == references and unmatched == {}

    async def main():
        async with SandboxFactory(sandbox_config, run_context) as factory:
            results = []
            for task in tasks:
                async with factory.task_sandbox(task) as sandbox:
                    noop = await verify(sandbox, task)
                solved = await run_oracle(task, factory, f"{task.id}-oracle")
                results.append((task.id, noop, solved))
            return results

    for task_id, noop, solved in asyncio.run(main()):
        assert noop.score == 0.0 and noop.task_reward == 0.0 and not noop.infrastructure_error, (task_id, noop.log)
        assert solved.verification["score"] == 1.0 and solved.verification["task_reward"] == 1.0, (task_id, solved)
