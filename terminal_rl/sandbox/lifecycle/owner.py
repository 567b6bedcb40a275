"""Who created a container, in labels precise enough to tell later whether that owner still lives.

A pid alone is reused, so the owner is (host, boot id, pid, process start time). Everything we create
carries these labels plus the run and rollout ids, and the Slurm job it ran in (if any, for the
epilog): the janitor removes only what carries them.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

MANAGED = "terminal_rl.managed"
RUN_ID = "terminal_rl.run_id"
ROLLOUT_ID = "terminal_rl.rollout_id"
OWNER_HOST = "terminal_rl.owner.host"
OWNER_BOOT_ID = "terminal_rl.owner.boot_id"
OWNER_PID = "terminal_rl.owner.pid"
OWNER_START = "terminal_rl.owner.start_ticks"
SLURM_JOB = "terminal_rl.slurm_job"
CREATED_AT = "terminal_rl.created_at"


@dataclass(frozen=True)
class Owner:
    host: str
    boot_id: str
    pid: int
    start_ticks: int
    slurm_job: str = ""

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(
            socket.gethostname(), boot_id(), pid, process_start_ticks(pid) or 0, os.environ.get("SLURM_JOB_ID", "")
        )

    def labels(self, run_id: str, rollout_id: str) -> dict[str, str]:
        return {
            MANAGED: "1",
            RUN_ID: run_id,
            ROLLOUT_ID: rollout_id,
            OWNER_HOST: self.host,
            OWNER_BOOT_ID: self.boot_id,
            OWNER_PID: str(self.pid),
            OWNER_START: str(self.start_ticks),
            SLURM_JOB: self.slurm_job,
            CREATED_AT: f"{time.time():.0f}",
        }


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def process_stat(pid: int, proc: Path = Path("/proc")) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), None if gone."""
    try:
        return (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def process_start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    fields = process_stat(pid)
    return int(fields[19]) if fields else None


def process_is_running(pid: int, proc: Path = Path("/proc")) -> bool:
    """Alive and not a zombie awaiting its parent."""
    fields = process_stat(pid, proc)
    return bool(fields) and fields[0] != "Z"


def owner_is_gone(labels: dict[str, str], here: Owner) -> bool | None:
    """True when the owner process is dead, False when alive, None when it cannot be told from here
    (another host: only the TTL applies there)."""
    if labels.get(OWNER_HOST) != here.host:
        return None
    if labels.get(OWNER_BOOT_ID) != here.boot_id:
        return True
    try:
        pid, start = int(labels[OWNER_PID]), int(labels[OWNER_START])
    except (KeyError, ValueError):
        return True
    return process_start_ticks(pid) != start
