"""A checkpoint on Slurm's warning, not only every ``save_freq`` steps: before a time limit or a
preemption Slurm signals the job (``launcher.signal_delay_s`` ahead); the job's head asks the
trainer for a save (a request file in the run's shared directory, since the trainer is a Ray actor
in another process), the trainer saves at the end of its current step and acknowledges with the
step, and only then is the job requeued; the next attempt resumes from that checkpoint.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from terminal_rl.run_context import RunContext

REQUEST, SAVED = "save_request", "save_done"


def exchange_folder(run: RunContext) -> Path:
    """Where the job's head and the trainer exchange a request: beside the job's Slurm logs."""
    return run.log_dir / "slurm"


def request_save(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SAVED).unlink(missing_ok=True)
    _write_atomically(folder / REQUEST, f"{time.time()}\n")


def save_requested(folder: Path) -> bool:
    return (folder / REQUEST).is_file()


def acknowledge(folder: Path, step: int) -> None:
    """The save of ``step`` is on disk: the request is answered (removed first, so a request made
    after this save is never the one removed)."""
    (folder / REQUEST).unlink(missing_ok=True)
    _write_atomically(folder / SAVED, f"{step}\n")


def _write_atomically(path: Path, text: str) -> None:
    """``path`` appears with all of ``text`` or not at all: the head polls for it from another process
    and must never read it half written (an empty file read as a step failed under load)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


def clear(folder: Path) -> None:
    """A new attempt starts with no request pending (an earlier attempt's is answered or moot)."""
    for name in (REQUEST, SAVED):
        (folder / name).unlink(missing_ok=True)


def wait_for_save(folder: Path, timeout_sec: float, poll_sec: float = 1.0) -> int | None:
    """The step the trainer saved for the request, or None if it did not answer in time."""
    deadline = time.monotonic() + timeout_sec
    while time.monotonic() < deadline:
        if (folder / SAVED).is_file():
            return int((folder / SAVED).read_text().strip())
        time.sleep(poll_sec)
    return None
