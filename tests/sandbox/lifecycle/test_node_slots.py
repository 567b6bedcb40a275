"""``sandbox.max_sandboxes`` is the node's cap: slots taken by another process of the run count, and
a process that dies (SIGKILL) gives its slots back."""

import asyncio
import signal
import subprocess
import sys
import time

import pytest

from terminal_rl.sandbox.lifecycle.node_slots import NodeSlots

HOLDER = """
import asyncio, sys
from pathlib import Path
from terminal_rl.sandbox.lifecycle.node_slots import NodeSlots

async def main():
    slots = NodeSlots(Path(sys.argv[1]), 2)
    async with slots.hold(), slots.hold():
        print("holding", flush=True)
        await asyncio.sleep(60)

asyncio.run(main())
"""


async def try_hold(slots: NodeSlots, seconds: float) -> int | None:
    try:
        async with asyncio.timeout(seconds):
            async with slots.hold() as slot:
                return slot
    except TimeoutError:
        return None


def test_another_process_holding_the_cap_blocks_this_one_until_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        slots = NodeSlots(tmp_path, 2)
        assert asyncio.run(try_hold(slots, 0.5)) is None, "the other process's two slots are the node's cap"
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        started = time.monotonic()
        assert asyncio.run(try_hold(slots, 5)) in (0, 1), "a killed process's slots come back"
        assert time.monotonic() - started < 2
    finally:
        holder.kill()


def test_coroutines_of_one_process_share_the_cap(tmp_path):
    async def run():
        slots, alive, most = NodeSlots(tmp_path, 3), 0, 0

        async def one():
            nonlocal alive, most
            async with slots.hold():
                alive += 1
                most = max(most, alive)
                await asyncio.sleep(0.02)
                alive -= 1

        await asyncio.gather(*(one() for _ in range(10)))
        return most

    assert asyncio.run(run()) == 3


def test_a_cap_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="max_sandboxes must be at least 1"):
        NodeSlots(tmp_path, 0)
