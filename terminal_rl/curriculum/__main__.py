"""Curriculum CLI.

python -m terminal_rl.curriculum plot curriculum=judge_anneal [total_steps=N] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf

from terminal_rl.config import compose
from terminal_rl.curriculum.plot import plot_schedule
from terminal_rl.curriculum.schedule import schedule_from_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m terminal_rl.curriculum",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    plot = commands.add_parser("plot", help="difficulty mix and reward weights against steps (PNG)")
    plot.add_argument("--out", type=Path, help="default: curriculum_<name>.png in the current directory")
    args, overrides = parser.parse_known_args(argv)
    cfg = compose("curriculum_cli", overrides)
    name = next((o.split("=", 1)[1] for o in overrides if o.startswith("curriculum=")), "judge_anneal")
    schedule = schedule_from_config(OmegaConf.to_container(cfg.curriculum, resolve=True), int(cfg.total_steps))
    out = plot_schedule(schedule, name, args.out or Path(f"curriculum_{name}.png"), int(cfg.total_steps))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
