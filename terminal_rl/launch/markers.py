"""Files the nodes of one Slurm job exchange through the run's shared directory (under
``logs/slurm``), one set per attempt: a requeue keeps the job id, so the attempt
(``SLURM_RESTART_COUNT``) is in every name and no node of a requeued job sees an earlier attempt's
file (a worker that saw the old "done" would stop its Ray and leave the head waiting).

    rank<r>.prepared     node r passed its checks and has its base images and toolchain
    ray_nodes.json       the Ray nodes the head saw alive (each worker finds its own there)
    first_images.json    the task ids whose images the head built before step 1
    rank<r>.images       node r built those on its own engine (JSON: built, failed)
    trainer.done         the head's trainer exited
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from terminal_rl.run_context import RunContext

DONE, PREPARED, IMAGES = "trainer.done", "prepared", "images"
FIRST_IMAGES, RAY_NODES = "first_images.json", "ray_nodes.json"


def attempt_marker(run: RunContext, job_id: str, name: str) -> Path:
    """The file ``name`` of this attempt of the job; its folder is made."""
    attempt = os.environ.get("SLURM_RESTART_COUNT", "0")
    path = run.log_dir / "slurm" / f"{job_id}.attempt{attempt}.{name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def done_marker(run: RunContext, job_id: str) -> Path:
    """The file rank 0 writes when its trainer exits."""
    return attempt_marker(run, job_id, DONE)


def rank_marker(run: RunContext, job_id: str, rank: int, what: str) -> Path:
    return attempt_marker(run, job_id, f"rank{rank}.{what}")


def write_json(path: Path, value) -> None:
    """Whole or not at all: readers on other nodes poll for the file."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(value))
    partial.replace(path)


def wait_for_ranks(
    run: RunContext, job_id: str, ranks: range | list[int], what: str, timeout_sec: float, poll_sec: float = 2
) -> dict[int, str]:
    """Until every rank of ``ranks`` has written its ``what`` marker; their contents by rank. Raises
    naming the ranks still missing."""
    deadline = time.monotonic() + timeout_sec
    markers = {rank: rank_marker(run, job_id, rank, what) for rank in ranks}
    while missing := [rank for rank, marker in markers.items() if not marker.exists()]:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"node rank(s) {missing} did not report {what!r} within {timeout_sec:g} s: see "
                f"their logs in {run.log_dir / 'slurm'}"
            )
        time.sleep(poll_sec)
    return {rank: marker.read_text() for rank, marker in markers.items()}
