"""Plot a curriculum: difficulty mix and reward weights against steps (Hydra app on
conf/curriculum_cli.yaml).

python -m terminal_rl.curriculum curriculum=judge_anneal [total_steps=N] [out=FILE]
"""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from terminal_rl.curriculum.plot import plot_schedule
from terminal_rl.curriculum.schedule import schedule_from_config


@hydra.main(config_path="../../conf", config_name="curriculum_cli", version_base="1.3")
def main(cfg: DictConfig) -> None:
    name = HydraConfig.get().runtime.choices["curriculum"]
    schedule = schedule_from_config(OmegaConf.to_container(cfg.curriculum, resolve=True), int(cfg.total_steps))
    out = plot_schedule(schedule, name, Path(cfg.out or f"curriculum_{name}.png"), int(cfg.total_steps))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
