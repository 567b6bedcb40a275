"""``sandbox.max_sandboxes`` as a node's cap: a cross-process semaphore of slot files, one
``flock`` each, in the run's node-local folder. Every process of the run on the node (verl's
agent-loop workers, an evaluation) takes a slot per sandbox, so the node runs at most the cap
whatever the number of workers. The kernel drops a dead process's locks (SIGKILL included), so a
slot is never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

# Seconds between tries while every slot is taken: short first, then at most MAX_WAIT_SEC.
FIRST_WAIT_SEC, MAX_WAIT_SEC = 0.02, 0.5


class NodeSlots:
    def __init__(self, folder: Path, count: int):
        if count < 1:
            raise ValueError(f"sandbox.max_sandboxes must be at least 1, not {count}")
        self.folder, self.count = folder, count
        # Within this process, coroutines queue here first: only a winner polls the slot files.
        self._local = asyncio.Semaphore(count)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[int]:
        """One of the node's slots, held for the block; yields its number."""
        async with self._local:
            fd, slot = await self._acquire()
            try:
                yield slot
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    async def _acquire(self) -> tuple[int, int]:
        self.folder.mkdir(parents=True, exist_ok=True)
        wait = FIRST_WAIT_SEC
        while True:
            for slot in range(self.count):
                fd = os.open(self.folder / f"{slot}.slot", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd, slot
            await asyncio.sleep(wait)
            wait = min(wait * 2, MAX_WAIT_SEC)
