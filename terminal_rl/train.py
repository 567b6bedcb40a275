"""Train a terminal agent with GRPO (Hydra app; the config is conf/train.yaml on top of verl's).

python -m terminal_rl.train hardware=cpu model=tiny                       this machine, end to end
python -m terminal_rl.train hardware=h100_4x8 model=qwen3_32b curriculum=judge_anneal
python -m terminal_rl.train preflight hardware=h100_4x8 model=qwen3_32b   only the checks
python -m terminal_rl.train --cfg job hardware=cpu model=tiny             the composed config
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

PREFLIGHT_ONLY = len(sys.argv) > 1 and sys.argv[1] == "preflight"
if PREFLIGHT_ONLY:
    del sys.argv[1]


def preflight(cfg: DictConfig) -> bool:
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

    apply_environment(run_environment(cfg))  # before verl is imported: it fixes the platform
    if not preflight(cfg):
        sys.exit(1)
    if PREFLIGHT_ONLY:
        return
    from terminal_rl.launch import launch

    launch(cfg)


if __name__ == "__main__":
    main()
