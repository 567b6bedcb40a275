"""Sandbox speed, measured in one run against the ``docker exec`` baseline of the same run.

    .venv/bin/python benchmarks/sandbox_bench.py [--quick]

Targets (issue: sandbox): command round trip p50 <= 5 ms and >= 15x faster than ``docker exec``;
p50/p99 with 32 sessions busy at once; container ready from a cached image p50 <= 0.6 s; 32
concurrent sandboxes under a mixed command load with no errors and no leaked container, reported as
rollouts per minute for a fixed scripted workload.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from terminal_rl.config import compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory, SandboxSpec
from terminal_rl.tasks.model import Limits

IMAGE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
LIMITS = Limits(
    agent_timeout_sec=600,
    verifier_timeout_sec=60,
    build_timeout_sec=600,
    cpus=1.0,
    memory_mb=256,
    pids=128,
    network=False,
)
# The fixed scripted workload of one benchmark rollout: mixed shell, Python and file-tool steps.
WORKLOAD = (
    "cd /tmp && mkdir -p work && cd work",
    "for i in $(seq 1 50); do echo line-$i; done > data.txt",
    "grep -c line data.txt",
    "python3 -c 'print(sum(range(10**5)))'",
    "ls -la /usr/bin | wc -l",
    "sort -r data.txt | head -3",
    "false",
)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def exec_baseline(api, container_id: str, n: int) -> list[float]:
    """``docker exec true`` round trips, one new exec each (what a harness without a session pays)."""
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        exec_id = api.exec_create(container_id, ["true"])["Id"]
        api.exec_start(exec_id)
        samples.append(time.perf_counter() - started)
    return samples


async def session_round_trips(sandbox, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        result = await sandbox.run("true", timeout=30)
        assert result.exit_code == 0
        samples.append(time.perf_counter() - started)
    return samples


async def rollout(factory: SandboxFactory, errors: list[str]) -> None:
    try:
        async with factory.sandbox(SandboxSpec(IMAGE, LIMITS, {})) as sandbox:
            for command in WORKLOAD:
                result = await sandbox.run(command, timeout=60)
                if result.timed_out or result.exit_code is None:
                    errors.append(f"{command}: {result}")
            await sandbox.files.write_text("/tmp/work/notes.txt", "notes\n")
            if await sandbox.files.read_text("/tmp/work/notes.txt") != "notes\n":
                errors.append("file round trip differs")
    except Exception as error:  # counted, the benchmark reports errors rather than stopping
        errors.append(repr(error))


async def main(quick: bool) -> None:
    n = 50 if quick else 200
    config = SandboxConfig.from_node(compose("services").sandbox)
    run = RunContext.from_config(
        RunConfig(id="bench", output_root="/tmp/terminal_rl-bench", node_local_root="/tmp/terminal_rl-bench")
    )
    client = docker_client(config.docker_host)
    async with SandboxFactory(config, run) as factory:
        ready = []
        for _ in range(5 if quick else 15):
            started = time.perf_counter()
            async with factory.sandbox(SandboxSpec(IMAGE, LIMITS, {})) as sandbox:
                ready.append(time.perf_counter() - started)
        async with factory.sandbox(SandboxSpec(IMAGE, LIMITS, {})) as sandbox:
            baseline = await asyncio.to_thread(exec_baseline, factory.docker.api, sandbox.container_id, n // 4)
            single = await session_round_trips(sandbox, n)

        sessions = 32
        async with asyncio.TaskGroup() as group:
            contexts = [factory.sandbox(SandboxSpec(IMAGE, LIMITS, {})) for _ in range(sessions)]
            opened = [group.create_task(c.__aenter__()) for c in contexts]
        busy: list[float] = []
        try:
            per_session = await asyncio.gather(*(session_round_trips(t.result(), n // 4) for t in opened))
            busy = [s for samples in per_session for s in samples]
        finally:
            await asyncio.gather(*(c.__aexit__(None, None, None) for c in contexts))

        rollouts, errors = (32 if quick else 96), []
        started = time.perf_counter()
        await asyncio.gather(*(rollout(factory, errors) for _ in range(rollouts)))
        elapsed = time.perf_counter() - started
    leaked = client.containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}={run.run_id}"]})

    exec_p50, session_p50 = statistics.median(baseline), statistics.median(single)
    print(f"docker exec round trip (baseline): p50 {ms(exec_p50)}  (n={len(baseline)})")
    print(
        f"session round trip:                p50 {ms(session_p50)}  p99 {ms(percentile(single, 0.99))}  "
        f"(n={len(single)})"
    )
    print(f"  speed-up over docker exec:       {exec_p50 / session_p50:.1f}x   (target >= 15x, p50 <= 5 ms)")
    print(
        f"32 sessions busy at once:          p50 {ms(statistics.median(busy))}  p99 {ms(percentile(busy, 0.99))}  "
        f"(n={len(busy)})"
    )
    print(
        f"container ready (cached image):    p50 {statistics.median(ready):.3f} s  max {max(ready):.3f} s  (target "
        "p50 <= 0.6 s)"
    )
    print(
        f"32 concurrent sandboxes, mixed load: {rollouts} rollouts of {len(WORKLOAD)} commands + 2 file ops "
        f"in {elapsed:.1f} s = {rollouts / elapsed * 60:.0f} rollouts/min; errors {len(errors)}; leaked containers "
        f"{len(leaked)}"
    )
    for error in errors[:5]:
        print("  error:", error)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    asyncio.run(main(parser.parse_args().quick))
