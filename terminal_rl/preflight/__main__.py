"""Only the training run's checks, in seconds, nothing started (Hydra app on conf/train.yaml, the
same config ``terminal_rl.train`` composes, which runs them first too).

python -m terminal_rl.preflight hardware=h100_4x8 model=qwen3_32b
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from terminal_rl.preflight import apply_run_environment, preflight


@hydra.main(config_path="../../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    apply_run_environment(cfg)  # as the training run has it (verl's platform)
    if preflight(cfg) is None:
        sys.exit(1)


if __name__ == "__main__":
    main()
