"""The Slurm epilog's command (Hydra app on ``conf/epilog.yaml``): end job N's processes that
outlived it on this node, then remove its sandbox containers (``launch/epilog/__init__.py``).

python -m terminal_rl.launch.epilog [job_id=N] [grace_sec=10]   (job_id default: $SLURM_JOB_ID)
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from terminal_rl.launch.epilog import end_processes, job_processes
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.lifecycle.janitor import sweep_until_settled
from terminal_rl.sandbox.runtime.docker_client import docker_client


@hydra.main(config_path="../../../conf", config_name="epilog", version_base="1.3")
def main(cfg: DictConfig) -> None:
    job_id = str(cfg.job_id or "")
    if not job_id.isdigit():
        raise SystemExit(f"needs the ended job's numeric id (job_id=N or $SLURM_JOB_ID), got {job_id!r}")
    survivors = job_processes(job_id)
    killed = end_processes(survivors, float(cfg.grace_sec))
    removed = sweep_until_settled(docker_client(SandboxConfig.from_node(cfg.sandbox).docker_host), slurm_job=job_id)
    print(
        f"epilog for job {job_id}: ended {len(survivors)} leftover processes ({len(killed)} needed "
        f"SIGKILL), removed {removed} sandbox containers"
    )


if __name__ == "__main__":
    main()
