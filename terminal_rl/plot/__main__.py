"""``python -m terminal_rl.plot run.id=RUN`` | ``python -m terminal_rl.plot compare RUN_A RUN_B ...``
(overrides such as ``run.output_root=...`` compose conf/run/)."""

from __future__ import annotations

import sys

from terminal_rl.config import compose, project_path
from terminal_rl.plot import plot_compare, plot_run


def main(argv: list[str]) -> int:
    compare = bool(argv) and argv[0] == "compare"
    args = argv[1:] if compare else argv
    runs = [a for a in args if "=" not in a]
    overrides = [a for a in args if "=" in a]
    run = compose("services", overrides).run
    root = project_path(run.output_root)
    if compare:
        if len(runs) < 2:
            print("usage: python -m terminal_rl.plot compare RUN_A RUN_B [...] [run.output_root=...]", file=sys.stderr)
            return 2
        missing = [r for r in runs if not (root / r / "logs").is_dir()]
        if missing:
            print(f"no runs {missing} under {root}", file=sys.stderr)
            return 1
        out = plot_compare([root / r for r in runs], root / "compare" / f"{'_vs_'.join(runs)}.png")
        print(out)
        return 0
    if runs or "run.id" not in " ".join(overrides):
        print("usage: python -m terminal_rl.plot run.id=RUN [run.output_root=...]", file=sys.stderr)
        return 2
    for path in plot_run(root / run.id):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
