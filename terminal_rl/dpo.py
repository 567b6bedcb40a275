"""DPO on the preference pairs of a run's datasets, on verl's SFT trainer (Hydra app; conf/dpo.yaml).

python -m terminal_rl.dpo run.id=RUN model.path=outputs/RUN/sft/model      after SFT, this machine
python -m terminal_rl.dpo run.id=RUN hardware=h100_8x model=qwen3_8b model.path=...
python -m terminal_rl.train model.path=outputs/RUN/dpo/model ...             then RL from the result
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="../conf", config_name="dpo", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.sft import train_on_records

    train_on_records(cfg, "dpo")


if __name__ == "__main__":
    main()
