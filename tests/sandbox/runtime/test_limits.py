"""Abuse is contained: limits enforced by the real daemon, observed from inside the container."""

import asyncio
from dataclasses import replace

import pytest
from docker.errors import NotFound

from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import small_limits

pytestmark = pytest.mark.docker


@pytest.mark.both_engines
def test_daemon_supports_the_cgroup_controllers_the_limits_rely_on(sandbox_config):
    """Fails (never skips) on a daemon that cannot enforce memory, swap, pids or cpu limits."""
    info = docker_client(sandbox_config.docker_host).info()
    unsupported = [key for key in ("MemoryLimit", "SwapLimit", "PidsLimit", "CpuCfsQuota") if not info.get(key)]
    assert unsupported == [], f"the Docker daemon reports unsupported cgroup controllers: {unsupported}"


def test_container_is_locked_down(in_sandbox, sandbox_config):
    async def inspect(sandbox):
        attrs = await sandbox.docker.call(sandbox.docker.api.inspect_container, sandbox.container_id)
        caps = await sandbox.run("grep CapEff /proc/self/status", timeout=10)
        return attrs, caps

    attrs, caps = in_sandbox(inspect, limits=small_limits(memory_mb=300, pids=50, cpus=0.5))
    host = attrs["HostConfig"]
    assert host["Memory"] == 300 * 2**20 and host["MemorySwap"] == 300 * 2**20
    assert host["PidsLimit"] == 50 and host["NanoCpus"] == 500_000_000
    assert host["Privileged"] is False and host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["NetworkMode"] == "none"
    assert attrs["Config"]["Labels"]["terminal_rl.managed"] == "1"
    # Effective capabilities: exactly the kept ones (bit numbers from linux/capability.h).
    bits = {
        "CHOWN": 0,
        "DAC_OVERRIDE": 1,
        "FOWNER": 3,
        "FSETID": 4,
        "KILL": 5,
        "SETGID": 6,
        "SETUID": 7,
        "NET_BIND_SERVICE": 10,
    }
    assert int(caps.output.split()[1], 16) == sum(1 << bits[name] for name in sandbox_config.container.cap_add)


@pytest.mark.both_engines
def test_fork_bomb_hits_the_pids_limit_and_is_killed(in_sandbox):
    async def bomb(sandbox):
        result = await sandbox.run("bomb() { bomb | bomb & }; bomb; sleep 60", timeout=3)
        # pids.current drops only as the killed processes are reaped: wait up to 5 s for it to settle.
        counters = await sandbox.run(
            "cd /sys/fs/cgroup/pids && for _ in $(seq 50); do [ $(cat pids.current) -lt 20 ] && break; sleep 0.1; done;"
            " cat pids.max pids.current pids.events",
            timeout=10,
        )
        after = await sandbox.run("echo usable", timeout=10)
        return result, counters, after

    result, counters, after = in_sandbox(bomb, limits=small_limits(pids=64))
    assert result.timed_out
    maximum, current, _, refused_forks = counters.output.split()
    assert maximum == "64"
    assert int(refused_forks) > 0, "forks were refused at the pids limit"
    assert int(current) < 20, "the bomb's processes were killed with its process group"
    assert after.output == "usable\n"


@pytest.mark.both_engines
def test_memory_hog_is_oom_killed_and_the_sandbox_survives(in_sandbox):
    async def hog(sandbox):
        result = await sandbox.run("python3 -c 'x = bytearray(400 * 2**20); print(len(x))'", timeout=60)
        events = await sandbox.run("awk '/^oom_kill /{print $2}' /sys/fs/cgroup/memory/memory.oom_control", timeout=10)
        after = await sandbox.run("echo alive", timeout=10)
        return result, events, after

    result, events, after = in_sandbox(hog, limits=small_limits(memory_mb=128))
    assert result.exit_code == 137, result.output
    assert "Killed" in result.output
    assert int(events.output) == 1, "the kernel's OOM killer acted inside the sandbox's cgroup"
    assert after.output == "alive\n"


@pytest.mark.both_engines
def test_main_process_expires_after_budget_plus_grace(in_sandbox, sandbox_config):
    """Whatever the lease says, a sandbox's main process ends after the task's budgets plus a grace,
    and the container removes itself."""
    short = replace(sandbox_config, container=replace(sandbox_config.container, grace_sec=1))

    async def wait_for_exit(sandbox):
        attrs = await sandbox.docker.call(sandbox.docker.api.inspect_container, sandbox.container_id)
        await asyncio.sleep(6)
        try:
            later = await sandbox.docker.call(sandbox.docker.api.inspect_container, sandbox.container_id)
        except NotFound:
            later = None
        return attrs, later

    attrs, later = in_sandbox(
        wait_for_exit, limits=small_limits(agent_timeout_sec=1, verifier_timeout_sec=1), config=short
    )
    command = attrs["Config"]["Cmd"]
    assert command[3].endswith("lease_watch.py") and command[-1] == "3", command
    assert later is None or later["State"]["Running"] is False
