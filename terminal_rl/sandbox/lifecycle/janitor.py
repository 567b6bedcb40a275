"""The janitor: removes our labelled containers whose owner process is gone or whose age exceeds the
TTL, and (on request) our networks that nothing uses any more.

It only ever touches objects carrying our ``terminal_rl.managed`` label — never a host-wide prune,
which would delete other users' containers. Owners on other hosts cannot be checked from here, so
only the TTL applies to them. It runs at start-up, periodically inside a running process, as
``python -m terminal_rl.sandbox command=janitor``, and for one Slurm job's containers at the job's end and in
the Slurm epilog (``terminal_rl/launch/epilog.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

import docker
from docker.errors import APIError, NotFound

from terminal_rl.sandbox.lifecycle.owner import CREATED_AT, MANAGED, RUN_ID, SLURM_JOB, Owner, owner_is_gone

log = logging.getLogger(__name__)


@dataclass
class SweepReport:
    removed_containers: list[str] = field(default_factory=list)
    removed_networks: list[str] = field(default_factory=list)
    kept: int = 0


def sweep(
    client: docker.DockerClient,
    here: Owner,
    ttl_sec: float,
    *,
    run_id: str | None = None,
    slurm_job: str | None = None,
    networks: bool = False,
    now: float | None = None,
) -> SweepReport:
    """One pass. ``run_id`` and ``slurm_job`` limit it to one run's or one Slurm job's containers;
    ``networks`` also removes unused ones."""
    now = time.time() if now is None else now
    report = SweepReport()
    label_filter = (
        [f"{MANAGED}=1"]
        + ([f"{RUN_ID}={run_id}"] if run_id else [])
        + ([f"{SLURM_JOB}={slurm_job}"] if slurm_job else [])
    )
    # ignore_removed: a container removed between listing and inspecting it (by its owner) is skipped.
    for container in client.containers.list(all=True, filters={"label": label_filter}, ignore_removed=True):
        labels = container.labels
        age = now - float(labels.get(CREATED_AT, 0) or 0)
        if owner_is_gone(labels, here) or age > ttl_sec:
            try:
                container.remove(force=True, v=True)
                report.removed_containers.append(container.id)
            except APIError as error:  # gone, or another janitor on this daemon is removing it
                if error.status_code not in (404, 409):
                    raise
        else:
            report.kept += 1
    if networks:
        for network in client.networks.list(filters={"label": f"{MANAGED}=1"}):
            network.reload()
            if not network.containers:
                with contextlib.suppress(NotFound, APIError):
                    network.remove()
                    report.removed_networks.append(network.name)
    return report


def sweep_until_settled(
    client: docker.DockerClient,
    *,
    run_id: str | None = None,
    slurm_job: str | None = None,
    passes: int = 4,
    settle_sec: float = 2.0,
) -> int:
    """Remove every container of a run or job whose processes are gone, owner alive or not. Creations
    those processes requested just before they died can still complete in the daemon: sweep again
    every ``settle_sec`` until a later pass finds nothing (at most ``passes``). Returns how many."""
    here, removed = Owner.current(), 0
    for attempt in range(passes):
        found = len(sweep(client, here, ttl_sec=0, run_id=run_id, slurm_job=slurm_job).removed_containers)
        removed += found
        if attempt and not found:
            break
        time.sleep(settle_sec)
    return removed


async def sweep_periodically(client: docker.DockerClient, ttl_sec: float, interval_sec: float) -> None:
    """Sweep now and every ``interval_sec`` until cancelled (runs beside the rollouts)."""
    here = Owner.current()
    while True:
        try:
            report = await asyncio.to_thread(sweep, client, here, ttl_sec)
            if report.removed_containers:
                log.warning("janitor removed %d orphaned sandbox containers", len(report.removed_containers))
        except Exception:  # a sweep must never take the run down
            log.exception("janitor sweep failed")
        await asyncio.sleep(interval_sec)
