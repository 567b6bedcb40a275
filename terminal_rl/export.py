"""Merge a trained checkpoint into a Hugging Face folder (Hydra app), for evaluation or serving.

    python -m terminal_rl.export run.id=20261129-101500                  latest checkpoint
    python -m terminal_rl.export run.id=20261129-101500 step=200 upload.repo_id=my-lab/agent   and push it
    python -m terminal_rl.export run.id=20261129-101500 source=sft        the SFT run's latest checkpoint

The folder (weights as safetensors, config, tokenizer with the chat template) is what
``policy=token policy.tokenizer=<folder>`` and the vLLM server of ``evaluate launcher=slurm`` take.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from terminal_rl.config import project_path
from terminal_rl.run_context import RunContext


def checkpoint_step(checkpoints, step: str | int) -> int:
    """The step to export: ``latest`` or a number, checked against what is on disk."""
    marker = checkpoints / "latest_checkpointed_iteration.txt"
    available = sorted(int(p.name.removeprefix("global_step_")) for p in checkpoints.glob("global_step_*"))
    if not available:
        raise FileNotFoundError(f"no checkpoint under {checkpoints} (trainer.save_freq sets how often they are saved)")
    chosen = (
        int(marker.read_text().strip())
        if str(step) == "latest" and marker.exists()
        else available[-1]
        if str(step) == "latest"
        else int(step)
    )
    if chosen not in available:
        raise FileNotFoundError(f"no checkpoint for step {chosen} under {checkpoints}; available steps: {available}")
    return chosen


@hydra.main(config_path="../conf", config_name="export", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.integrations.verl.export import merge_checkpoint

    run = RunContext.from_config(cfg.run)
    if cfg.source not in ("rl", "sft"):
        sys.exit(f"export: source={cfg.source!r} is not one of rl, sft")
    root = run.shared_dir if cfg.source == "rl" else run.shared_dir / "sft"
    checkpoints = root / "checkpoints"
    try:
        step = checkpoint_step(checkpoints, cfg.step)
    except FileNotFoundError as error:
        sys.exit(f"export: {error}")
    target = project_path(cfg.target_dir) if cfg.target_dir else root / "hf" / f"global_step_{step}"
    folder = checkpoints / f"global_step_{step}"
    merge_checkpoint(
        folder / "actor" if cfg.source == "rl" else folder, target, cfg.upload.repo_id or None, cfg.upload.private
    )
    print(
        f"exported step {step} of run {run.run_id} to {target}"
        + (f" and uploaded it to {cfg.upload.repo_id}" if cfg.upload.repo_id else "")
    )


if __name__ == "__main__":
    main()
