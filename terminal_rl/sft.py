"""Multi-turn SFT warm start on verl's SFT trainer (Hydra app; the config is conf/sft.yaml).

python -m terminal_rl.sft run.id=RUN                       the SFT records of RUN, this machine
python -m terminal_rl.sft run.id=RUN hardware=h100_8x model=qwen3_8b
python -m terminal_rl.train model.path=outputs/RUN/sft/model ...     then RL from the result
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


def train_on_records(cfg: DictConfig, kind: str) -> None:
    """The SFT or DPO stage (``kind``) of the composed config: header, verl's trainer, the model's path."""
    from terminal_rl.config import project_path
    from terminal_rl.console import app_console, print_header
    from terminal_rl.integrations.verl.sft import run_dpo, run_sft
    from terminal_rl.models.tiny import ensure_tiny_model
    from terminal_rl.run_context import RunContext

    run, out = RunContext.from_config(cfg.run), project_path(cfg.output_dir)
    trainer, lora = cfg.verl.trainer, cfg.model.lora
    length = (
        f"{trainer.total_training_steps} steps" if trainer.total_training_steps else f"{trainer.total_epochs} epochs"
    )
    objective = f", beta {cfg.verl.dpo.beta:g}" if kind == "dpo" else ""
    with app_console(kind, run, bool(cfg.verbose)) as console:
        print_header(
            console,
            kind,
            run,
            [
                ("data", ", ".join(str(project_path(f)) for f in cfg.verl.data.train_files)),
                (
                    "model",
                    f"{cfg.model.path} ({cfg.model.name}) on {cfg.hardware.name}, {length}, lr {cfg.verl.optim.lr:g}"
                    + objective
                    + (f", LoRA rank {lora.rank} alpha {lora.alpha}" if lora.rank else ""),
                ),
                ("output", f"{out}  (verl's output: {out / 'train.log'})"),
            ],
        )
        ensure_tiny_model(cfg.model)
        runner = run_dpo if kind == "dpo" else run_sft
        result = runner(cfg.verl, cfg.hardware.env, int(cfg.hardware.cpus_per_node), out, echo=console.print)
        trained = (
            f"{len(result.losses)} steps, loss {result.losses[0]:.4f} -> {result.losses[-1]:.4f}"
            if result.losses
            else "no new steps (the checkpoint in verl.trainer.default_local_dir had finished)"
        )
        console.print(f"{kind.upper()} done: {trained}")
        console.print(f"model: {result.model}  (python -m terminal_rl.train model.path={result.model} ...)")


@hydra.main(config_path="../conf", config_name="sft", version_base="1.3")
def main(cfg: DictConfig) -> None:
    train_on_records(cfg, "sft")


if __name__ == "__main__":
    main()
