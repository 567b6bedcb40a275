"""Training plots: every figure of a run into ``<run dir>/plots/``, and runs compared.

    python -m terminal_rl.plot run.id=RUN
    python -m terminal_rl.plot command=compare runs=[RUN_A,RUN_B] [run.output_root=...]

Written automatically at every checkpoint and at the end of a training run.
"""

from __future__ import annotations

from pathlib import Path


def plot_run(run_dir: Path, warn=None) -> list[Path]:
    """Every figure of the run in ``run_dir`` as ``<run_dir>/plots/<name>.png``. With ``warn``, a
    figure that fails is reported through it and the others are still written (a training run in
    progress: plots must never stop it); without, the first failure raises."""
    from terminal_rl.analysis import load_metrics, load_trajectories
    from terminal_rl.plot.figures import FIGURES

    try:
        metrics, trajectories = load_metrics(run_dir), load_trajectories(run_dir)
    except FileNotFoundError as error:
        if warn is None:
            raise
        warn(f"no plots yet: {error}")
        return []
    out = run_dir / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in FIGURES.items():
        try:
            make(metrics, trajectories).savefig(out / f"{name}.png", dpi=110)
        except Exception as error:  # noqa: BLE001 - reported, the other figures still written
            if warn is None:
                raise
            warn(f"plot {name} of {run_dir} not written: {type(error).__name__}: {error}")
            continue
        written.append(out / f"{name}.png")
    return written


def plot_compare(run_dirs: list[Path], out: Path) -> Path:
    from terminal_rl.analysis import load_metrics, load_trajectories
    from terminal_rl.plot.figures import compare

    out.parent.mkdir(parents=True, exist_ok=True)
    compare({d.name: (load_metrics(d), load_trajectories(d)) for d in run_dirs}).savefig(out, dpi=110)
    return out
