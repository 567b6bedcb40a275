"""One node's part of a training run started with plain ``sbatch`` (slurm/*.sbatch): the same
bootstrap as ``launcher=slurm`` does through submitit (``launch/node.py``). A Hydra app on
conf/train.yaml; the sbatch scripts pass ``launcher=slurm``.

    srun python -m terminal_rl.launch launcher=slurm hardware=h100_2x8 model=qwen3_32b
"""

from __future__ import annotations

import os
import signal
import sys

import hydra
import submitit
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from terminal_rl.launch.node import node_run_id, requeue_on_signal
from terminal_rl.launch.slurm import SlurmRun


@hydra.main(config_path="../../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    sys.exit(run_node(cfg, list(HydraConfig.get().overrides.task), dict(os.environ)))


def run_node(cfg: DictConfig, overrides: list[str], environ: dict[str, str]) -> int:
    """Check the config (every node, the same checks as a login node), then this node's part. The run
    id, unless set (``run.id=`` or ``$TERMINAL_RL_RUN_ID``), is the job name and a hash of the
    command's overrides: a requeue keeps it, and submitting the same command again continues the run."""
    # Until the handler is in place the warning is ignored: its default action would end the node.
    signal.signal(submitit.JobEnvironment._usr_sig(), signal.SIG_IGN)
    from terminal_rl.preflight import preflight

    if cfg.launcher.kind != "slurm":
        raise SystemExit("python -m terminal_rl.launch runs under Slurm: add launcher=slurm (slurm/*.sbatch do)")
    run_id = node_run_id(overrides, environ)
    if run_id is not None:
        with open_dict(cfg):
            cfg.run.id = run_id
    # submitit's JobEnvironment reads Slurm's variables once told it runs under Slurm.
    os.environ.setdefault("SUBMITIT_EXECUTOR", "slurm")
    # Problems only: every node prints them. The node checks run in SlurmRun, on every node.
    job = preflight(cfg, on_this_node=False, notes_too=False)
    if job is None:
        return 1
    OmegaConf.resolve(job.verl)  # one config for every node and every attempt
    env = submitit.JobEnvironment()
    body = SlurmRun(job, restarts=int(environ.get("SLURM_RESTART_COUNT", "0")))
    requeue_on_signal(body, env.global_rank, str(env.job_id))
    if env.global_rank == 0:
        print(f"run {cfg.run.id}: submitting the same command again continues it", flush=True)
    print(body())
    return 0


if __name__ == "__main__":
    main()
