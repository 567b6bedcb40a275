"""A run's figures, or runs overlaid (Hydra app on ``conf/plot.yaml``).

python -m terminal_rl.plot run.id=RUN [run.output_root=...]               -> <run dir>/plots/
python -m terminal_rl.plot command=compare runs=[RUN_A,RUN_B] [run.output_root=...]   -> <root>/compare/
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from terminal_rl.config import chosen_command, project_path
from terminal_rl.plot import plot_compare, plot_run

COMMANDS = ("run", "compare")


@hydra.main(config_path="../../conf", config_name="plot", version_base="1.3")
def main(cfg: DictConfig) -> None:
    command, root = chosen_command(cfg.command, COMMANDS), project_path(cfg.run.output_root)
    runs = list(cfg.runs) if command == "compare" else [cfg.run.id]
    if command == "compare" and len(runs) < 2:
        sys.exit("command=compare needs runs=[RUN_A,RUN_B,...]")
    missing = [r for r in runs if not (root / r / "logs").is_dir()]
    if missing:
        sys.exit(f"no runs {missing} under {root} (python -m terminal_rl.plot run.id=RUN [run.output_root=...])")
    if command == "compare":
        print(plot_compare([root / r for r in runs], root / "compare" / f"{'_vs_'.join(runs)}.png"))
        return
    for path in plot_run(root / cfg.run.id):
        print(path)


if __name__ == "__main__":
    main()
