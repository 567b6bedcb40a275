"""Only the training run's checks, in seconds, nothing started (Hydra app on conf/train.yaml, the
same config ``terminal_rl.train`` composes, which runs them first too).

python -m terminal_rl.preflight hardware=h100_4x8 model=qwen3_32b
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig


def preflight(cfg: DictConfig) -> bool:
    """Print the problems (stderr), or ``ok`` and the run's notes; True when there is no problem."""
    from terminal_rl.integrations.verl.config_check import verl_problems
    from terminal_rl.training.preflight import notes, run_preflight

    # Under Slurm the node checks (container engine, disk, networks) run in the job, on every node.
    problems = run_preflight(cfg, verl_problems, on_this_node=cfg.launcher.kind == "local")
    for problem in problems:
        print(f"preflight: {problem}", file=sys.stderr)
    if not problems:
        print(f"preflight: ok ({cfg.model.name} on {cfg.hardware.name})")
        for note in notes(cfg):
            print(f"preflight: {note}")
    return not problems


@hydra.main(config_path="../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.integrations.verl.driver import apply_environment, run_environment

    apply_environment(run_environment(cfg))  # as the training run has it (verl's platform)
    if not preflight(cfg):
        sys.exit(1)


if __name__ == "__main__":
    main()
