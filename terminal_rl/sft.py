"""Multi-turn SFT warm start on verl's SFT trainer (Hydra app; the config is conf/sft.yaml).

    python -m terminal_rl.sft run.id=RUN                       the SFT records of RUN, this machine
    python -m terminal_rl.sft run.id=RUN hardware=h100_8x model=qwen3_8b lora.rank=32
    python -m terminal_rl.train model.path=outputs/RUN/sft/model ...     then RL from the result
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="../conf", config_name="sft", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.config import project_path
    from terminal_rl.integrations.verl.sft import run_sft

    if cfg.model.name == "tiny":
        from terminal_rl.models.tiny import make_tiny_model

        make_tiny_model(project_path(cfg.model.path), dict(cfg.model.architecture))
    out = project_path(cfg.output_dir)
    print(f"SFT {cfg.model.name} on {cfg.hardware.name}: {list(cfg.verl.data.train_files)} -> {out}")
    result = run_sft(cfg, out)
    print(f"SFT done: {result.steps} steps, loss {result.losses[0]:.4f} -> {result.losses[-1]:.4f}\n"
          f"model: {result.model}  (python -m terminal_rl.train model.path={result.model} ...)\nlog: {result.log}")


if __name__ == "__main__":
    main()
