"""Train a terminal agent with GRPO (Hydra app; the config is conf/train.yaml on top of verl's).

python -m terminal_rl.train hardware=cpu model=tiny                       this machine, end to end
python -m terminal_rl.train hardware=h100_4x8 model=qwen3_32b curriculum=judge_anneal
python -m terminal_rl.preflight hardware=h100_4x8 model=qwen3_32b       only the checks
python -m terminal_rl.train --cfg job hardware=cpu model=tiny             the composed config
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from terminal_rl.preflight import apply_run_environment, preflight


@hydra.main(config_path="../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.launch import launch

    apply_run_environment(cfg)  # before verl is imported: it fixes the platform
    job = preflight(cfg)
    if job is None:
        sys.exit(1)
    launch(job)


if __name__ == "__main__":
    main()
