"""Generate the model preset's tiny random model (Hydra app on ``conf/train_models.yaml``).

python -m terminal_rl.models.tiny [model=tiny_learner] [out=DIR] [model.init_seed=N]   (default: the preset's path)
"""

from __future__ import annotations

from pathlib import Path

import hydra
from omegaconf import DictConfig

from terminal_rl.config import project_path
from terminal_rl.models.tiny import make_tiny_model


@hydra.main(config_path="../../../conf", config_name="train_models", version_base="1.3")
def main(cfg: DictConfig) -> None:
    out = Path(cfg.out) if cfg.out else project_path(cfg.model.path)
    path = make_tiny_model(out, dict(cfg.model.architecture), cfg.model.tokenizer, int(cfg.model.init_seed))
    print(f"tiny Qwen3 model in {path}")


if __name__ == "__main__":
    main()
