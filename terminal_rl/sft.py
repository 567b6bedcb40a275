"""Multi-turn SFT warm start on verl's SFT trainer (Hydra app; the config is conf/sft.yaml).

    python -m terminal_rl.sft run.id=RUN                       the SFT records of RUN, this machine
    python -m terminal_rl.sft run.id=RUN hardware=h100_8x model=qwen3_8b
    python -m terminal_rl.train model.path=outputs/RUN/sft/model ...     then RL from the result
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="../conf", config_name="sft", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.config import project_path
    from terminal_rl.integrations.verl.sft import run_sft
    from terminal_rl.models.tiny import ensure_tiny_model

    ensure_tiny_model(cfg.model)
    out = project_path(cfg.output_dir)
    print(f"SFT {cfg.model.name} on {cfg.hardware.name}: {list(cfg.verl.data.train_files)} -> {out}")
    result = run_sft(cfg, out)
    trained = (f"{len(result.losses)} steps, loss {result.losses[0]:.4f} -> {result.losses[-1]:.4f}" if result.losses
               else "no new steps (the checkpoint in verl.trainer.default_local_dir had finished)")
    print(f"SFT done: {trained}\nmodel: {result.model}  (python -m terminal_rl.train model.path={result.model} ...)\n"
          f"log: {result.log}")


if __name__ == "__main__":
    main()
