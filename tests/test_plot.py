"""`python -m terminal_rl.plot` on the shared CPU run: every figure is written (the run wrote them at
its checkpoints and end too), non-empty, and has the series it claims; `compare` overlays runs."""

import subprocess
import sys

import pytest
from PIL import Image

from terminal_rl.analysis import load_metrics, load_trajectories
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.plot.figures import FIGURES

pytestmark = [pytest.mark.verl, pytest.mark.docker]

# Per figure, labels its axes must show (from the run's real metrics).
SERIES = {
    "reward": {"reward (step mean)", "rolling mean (5 steps)", "±1σ over trajectories"},
    "reward_components": {"tests", "judge", "format", "exec"},
    "tests": {
        "test score",
        "pass rate",
        "test score (terminal_bench_rl, mean@1)",
        "pass rate (terminal_bench_rl, mean@1)",
    },
    "optimisation": {"actor/ppo_kl", "actor/entropy", "actor/grad_norm"},
    "lengths": {"response_length/mean", "num_turns/mean"},
    "zero_variance": {"rollout/zero_variance_tests", "rollout/masked_fraction", "rollout/filtered"},
    "curriculum": {"curriculum/stage", "judge weight easy", "judge weight hard"},
    "behaviour": {"behaviour/loop", "behaviour/parse_error_rate"},
    "reward_distribution": {"first half", "second half"},
}


def plot(*args):
    result = subprocess.run(
        [sys.executable, "-m", "terminal_rl.plot", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


def test_every_figure_is_written_and_has_its_series(cpu_run):
    run = cpu_run["dir"]
    assert {p.name for p in (run / "plots").glob("*.png")} == {f"{name}.png" for name in FIGURES}, (
        "the run plotted itself at its checkpoints and at the end"
    )
    written = plot(f"run.id={run.name}", f"run.output_root={run.parent}")
    assert sorted(p.rsplit("/", 1)[1] for p in written) == sorted(f"{name}.png" for name in FIGURES)
    for path in written:
        image = Image.open(path).convert("L")
        assert image.size[0] > 400 and len(set(image.getdata())) > 10, f"{path} is blank"
    metrics, trajectories = load_metrics(run), load_trajectories(run)
    for name, expected in SERIES.items():
        fig = FIGURES[name](metrics, trajectories)
        labels = {artist.get_label() for ax in fig.axes for artist in [*ax.lines, *ax.collections, *ax.patches]}
        labels |= {text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()}
        missing = {label for label in expected if not any(label in found for found in labels)}
        assert not missing, f"{name} lacks {missing}"


def test_compare_overlays_runs(cpu_run, tmp_path):
    run = cpu_run["dir"]
    (tmp_path / "again").symlink_to(run, target_is_directory=True)
    (tmp_path / "ci").symlink_to(run, target_is_directory=True)
    [out] = plot("command=compare", "runs=[ci,again]", f"run.output_root={tmp_path}")
    assert out.endswith("compare/ci_vs_again.png") and Image.open(out).size[0] > 400
