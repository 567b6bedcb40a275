"""A rollout whose process is SIGKILLed leaves containers; the janitor removes them and only them."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from docker.types import Ulimit

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.lifecycle.janitor import sweep
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID, Owner, owner_is_gone
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import BASE_IMAGE

pytestmark = pytest.mark.docker
# Podman refuses containers whose default open-file limit exceeds its own; set it explicitly.
ULIMITS = [Ulimit(name="nofile", soft=16384, hard=16384), Ulimit(name="nproc", soft=16384, hard=16384)]

OWNER_SCRIPT = """
import asyncio, sys
from terminal_rl.config import compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory, SandboxSpec
from tests.support import BASE_IMAGE, SMALL_LIMITS

async def main():
    config = SandboxConfig.from_node(compose("services").sandbox)
    root = "/tmp/trl-janitor"
    run = RunContext.from_config(RunConfig(id=sys.argv[1], output_root=root, node_local_root=root))
    async with SandboxFactory(config, run) as factory:
        async with factory.sandbox(SandboxSpec(BASE_IMAGE, SMALL_LIMITS, {})) as one:
            async with factory.sandbox(SandboxSpec(BASE_IMAGE, SMALL_LIMITS, {})) as two:
                await one.run("sleep 1", timeout=10)
                print("ready", flush=True)
                await asyncio.sleep(600)

asyncio.run(main())
"""


def test_sigkilled_owner_leaves_containers_that_the_janitor_removes(sandbox_config):
    client = docker_client(sandbox_config.docker_host)
    foreign = client.containers.run(
        BASE_IMAGE, ["sleep", "300"], detach=True, labels={"someone.else": "1"}, ulimits=ULIMITS
    )
    run_id = f"janitor-{os.getpid()}"
    try:
        owner = subprocess.Popen(
            [sys.executable, "-c", OWNER_SCRIPT, run_id],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        )
        assert owner.stdout.readline().strip() == "ready"
        ours = client.containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}={run_id}"]})
        assert len(ours) == 2
        assert owner_is_gone(ours[0].labels, Owner.current()) is False
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        time.sleep(0.5)
        leftovers = client.containers.list(all=True, filters={"label": f"{RUN_ID}={run_id}"})
        assert len(leftovers) == 2, "SIGKILL skips every cleanup path: the containers are still there"
        assert owner_is_gone(leftovers[0].labels, Owner.current()) is True

        cli = subprocess.run(
            [sys.executable, "-m", "terminal_rl.sandbox", "command=janitor"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert cli.returncode == 0, cli.stderr
        removed = re.search(r"removed (\d+) containers", cli.stdout)
        assert removed and int(removed.group(1)) >= 2, cli.stdout
        assert client.containers.list(all=True, filters={"label": f"{RUN_ID}={run_id}"}) == []
        foreign.reload()
        assert foreign.status == "running", "an unlabelled container is never touched"
    finally:
        foreign.remove(force=True)


def test_ttl_removes_even_live_owners(sandbox_config):
    client = docker_client(sandbox_config.docker_host)
    here = Owner.current()
    labels = here.labels("ttl-run", "r1")
    young = client.containers.run(BASE_IMAGE, ["sleep", "60"], detach=True, labels=labels, ulimits=ULIMITS)
    try:
        kept = sweep(client, here, ttl_sec=3600, run_id="ttl-run")
        assert (kept.removed_containers, kept.kept) == ([], 1)
        expired = sweep(client, here, ttl_sec=3600, run_id="ttl-run", now=time.time() + 7200)
        assert expired.removed_containers == [young.id]
    finally:
        if client.containers.list(all=True, filters={"id": young.id}):
            young.remove(force=True)
