"""One node's part of a run started with plain ``sbatch`` (slurm/*.sbatch): the same bootstrap as
``launcher=slurm`` (Ray head on rank 0, workers join, trainer on the head, janitor on exit).

    srun python -m terminal_rl.launch.node hardware=h100_2x8 model=qwen3_32b run.id=$RUN_ID
"""

from __future__ import annotations

import os
import sys

from omegaconf import OmegaConf

from terminal_rl.config import compose
from terminal_rl.launch.slurm import SlurmRun


def main(argv: list[str]) -> int:
    # submitit's JobEnvironment reads Slurm's variables once told it runs under Slurm.
    os.environ.setdefault("SUBMITIT_EXECUTOR", "slurm")
    cfg = compose("train", [*argv, "launcher=slurm"])
    OmegaConf.resolve(cfg)
    print(SlurmRun(OmegaConf.to_container(cfg))())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
