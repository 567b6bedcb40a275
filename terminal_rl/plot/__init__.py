"""Training plots: every figure of a run into ``<run dir>/plots/``, and runs compared.

    python -m terminal_rl.plot run.id=RUN
    python -m terminal_rl.plot compare RUN_A RUN_B [run.output_root=...]

Written automatically at every checkpoint and at the end of a training run.
"""

from __future__ import annotations

from pathlib import Path


def plot_run(run_dir: Path) -> list[Path]:
    """Every figure of the run in ``run_dir`` as ``<run_dir>/plots/<name>.png``."""
    from terminal_rl.analysis import load_metrics, load_trajectories
    from terminal_rl.plot.figures import FIGURES

    metrics, trajectories = load_metrics(run_dir), load_trajectories(run_dir)
    out = run_dir / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in FIGURES.items():
        make(metrics, trajectories).savefig(out / f"{name}.png", dpi=110)
        written.append(out / f"{name}.png")
    return written


def plot_run_or_warn(run_dir: Path, warn=print) -> list[Path]:
    """``plot_run`` for a training run in progress: a figure that fails is reported, never raised
    (plots must not stop training)."""
    try:
        return plot_run(run_dir)
    except Exception as error:  # noqa: BLE001 - any failure of a plot is only reported
        warn(f"plots of {run_dir} not written: {type(error).__name__}: {error}")
        return []


def plot_compare(run_dirs: list[Path], out: Path) -> Path:
    from terminal_rl.analysis import load_metrics, load_trajectories
    from terminal_rl.plot.figures import compare

    out.parent.mkdir(parents=True, exist_ok=True)
    compare({d.name: (load_metrics(d), load_trajectories(d)) for d in run_dirs}).savefig(out, dpi=110)
    return out
