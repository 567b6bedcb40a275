"""Sandboxes clean themselves up: a SIGKILLed run leaves no container once its lease is stale, with no
janitor; a live run's sandboxes survive a long verification and an event loop that blocks."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory, SandboxSpec
from terminal_rl.sandbox.verify.verifier import verify
from tests.support import BASE_IMAGE, ENGINES, SMALL_LIMITS

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]

STALE_SEC = 4.0


def short_lease(sandbox_config):
    return replace(sandbox_config, lease=replace(sandbox_config.lease, renew_sec=1.0, stale_sec=STALE_SEC))


def containers_of(run_id: str, docker_host: str) -> list[dict]:
    """The run's containers as the engine lists them (the listing alone: podman answers a container
    that goes while it is inspected with a 500, not the 404 docker-py's ignore_removed skips)."""
    return docker_client(docker_host).api.containers(
        all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}={run_id}"]}
    )


def test_a_sigkilled_run_leaves_no_sandbox_behind(engine, tmp_path):
    """Four sandboxes of a run whose process is SIGKILLed are gone within the lease time plus a margin."""
    run_id = f"lease-{engine}-{os.getpid()}"
    owner = textwrap.dedent(f"""\
        import asyncio, sys
        from dataclasses import replace
        from terminal_rl.config import compose
        from terminal_rl.run_context import RunConfig, RunContext
        from terminal_rl.sandbox.config import SandboxConfig
        from terminal_rl.sandbox.runtime.sandbox import SandboxFactory, SandboxSpec
        from tests.support import BASE_IMAGE, SMALL_LIMITS
        config = SandboxConfig.from_node(compose("services", ["sandbox={ENGINES[engine]}"]).sandbox)
        config = replace(config, lease=replace(config.lease, renew_sec=1.0, stale_sec={STALE_SEC}),
                         janitor=replace(config.janitor, interval_sec=3600))
        run = RunContext.from_config(RunConfig("{run_id}", "{tmp_path}/shared", "{tmp_path}/local"))
        async def main():
            async with SandboxFactory(config, run) as factory:
                async def hold():
                    async with factory.sandbox(SandboxSpec(BASE_IMAGE, SMALL_LIMITS, {{}})):
                        await asyncio.sleep(3600)
                tasks = [asyncio.create_task(hold()) for _ in range(4)]
                labels = {{"label": "terminal_rl.run_id={run_id}"}}
                while len(factory.docker.client.containers.list(filters=labels)) < 4:
                    await asyncio.sleep(0.2)
                print("up", flush=True)
                await asyncio.gather(*tasks)
        asyncio.run(main())
        """)
    process = subprocess.Popen(
        [sys.executable, "-c", owner],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    try:
        assert process.stdout.readline().strip() == "up"
        docker_host = "unix:///run/podman/podman.sock" if engine == "podman" else ""
        assert len(containers_of(run_id, docker_host)) == 4
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed = time.monotonic()
        while containers_of(run_id, docker_host) and time.monotonic() - killed < STALE_SEC + 20:
            time.sleep(0.5)
        gone_after = time.monotonic() - killed
    finally:
        process.kill()
    assert containers_of(run_id, docker_host) == [], "the run's sandboxes outlived it"
    print(
        f"{engine}: sandboxes of a SIGKILLed run gone {gone_after:.1f}s after the kill (lease stale after {STALE_SEC}s)"
    )


def test_a_live_run_keeps_its_sandboxes_through_a_long_verification_and_a_blocked_loop(
    sandbox_config, run_context, tasks
):
    task = replace(
        tasks["csv-file-parsing-amount-sum"],
        id="slow-verification",
        environment=replace(
            tasks["csv-file-parsing-amount-sum"].environment, image=BASE_IMAGE, dockerfile=None, build_context={}
        ),
        tests={
            "test_outputs.py": "import time\n\ndef test_script_exists():\n    time.sleep(6)\n\n"
            "def test_sum_calculation_correct():\n    pass\n"
        },
        files={},
    )

    async def main():
        async with SandboxFactory(short_lease(sandbox_config), run_context) as factory:
            async with factory.sandbox(SandboxSpec(BASE_IMAGE, SMALL_LIMITS, {})) as sandbox:
                time.sleep(STALE_SEC + 2)  # the event loop is blocked longer than the lease lasts
                alive = (await sandbox.run("echo alive")).output
                result = await verify(sandbox, task)  # 6 s of tests, beyond the lease's staleness
                return alive, result, (await sandbox.run("echo still")).output

    alive, result, still = asyncio.run(main())
    assert (alive, still) == ("alive\n", "still\n")
    assert result.score == 1.0 and result.duration_sec >= 6
