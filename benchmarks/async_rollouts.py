"""Asynchronous rollouts: steps per hour and sandbox utilisation of one run configuration in
``rollouts=sync`` and ``rollouts=async``, measured in one run.

    .venv/bin/python benchmarks/async_rollouts.py [--steps 8] [--max-staleness 2] [--prefetch-batches 1 2] [--rerun]

Both modes run ``python -m terminal_rl.train experiment=async_rollouts`` (conf/experiment/
async_rollouts.yaml): the tiny model on the CPU backend, GRPO, 2 prompts x 2 rollouts a step, on
``slow_check`` tasks, whose check waits a lognormal time first (median 8 s, 1% over 82 s:
``terminal_rl/tasks/families/slow_check.py`` says why that resembles terminal episodes). In sync mode
a step waits for its slowest episode; in async mode the actor trains on the first groups to finish
while the others keep running, with ``--prefetch-batches`` batches issued ahead (one async arm per
value given).

* steps per hour: the run's steps over the training loop's time (the sum of verl's ``timing_s/step``:
  sampling, the update and the weights sync; there is no validation or checkpoint here);
* sandbox utilisation: the episodes' sandbox time (each logged episode's duration) over the sandboxes
  the run may hold (``model_hardware.sandbox_concurrency``) times the training loop's time;
* per step: the staleness of its samples (verl's ``trajectory_staleness_worst``, in steps) and the
  groups still generating while it trained.

A mode whose run finished is read back, not rerun (``--rerun`` runs both again). Writes
``benchmarks/results/async_rollouts.json`` and ``.png``; the runs are under ``outputs/benchmarks/``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from terminal_rl.analysis import load_metrics  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
STALENESS = "training/off_policy/trajectory_staleness_worst"


def run_id(mode: str, prefetch_batches: int) -> str:
    return f"async-rollouts-{mode}" + (f"-prefetch{prefetch_batches}" if mode == "async" else "")


def train(output_root: Path, mode: str, steps: int, max_staleness: int, prefetch_batches: int) -> None:
    command = [
        sys.executable,
        "-m",
        "terminal_rl.train",
        "experiment=async_rollouts",
        f"rollouts={mode}",
        f"trainer.total_training_steps={steps}",
        f"run.output_root={output_root}",
        f"run.id={run_id(mode, prefetch_batches)}",
    ]
    if mode == "async":
        command += [
            f"async_rollouts.max_staleness={max_staleness}",
            f"async_rollouts.prefetch_batches={prefetch_batches}",
        ]
    print(" ".join(command[1:]), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def finished(folder: Path, steps: int) -> bool:
    try:
        return len(load_metrics(folder)) >= steps
    except FileNotFoundError:
        return False


def episodes(folder: Path) -> list[dict]:
    """Every training episode the run logged (start time and duration, s)."""
    out = []
    for path in sorted((folder / "logs" / "rollouts").glob("train_step*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            t = json.loads(line)
            out.append({"started_at": t.get("started_at"), "seconds": t.get("duration_sec") or 0.0})
    return out


def measure(folder: Path, sandboxes: int) -> dict:
    metrics = load_metrics(folder)
    step_seconds = [float(s) for s in metrics["timing_s/step"]]
    loop_seconds = sum(step_seconds)
    logged = episodes(folder)
    figures = {
        "steps": len(step_seconds),
        "step_seconds": [round(s, 1) for s in step_seconds],
        "training_loop_seconds": round(loop_seconds, 1),
        "steps_per_hour": round(3600 * len(step_seconds) / loop_seconds, 2),
        "episodes": len(logged),
        "sandbox_utilisation": round(sum(e["seconds"] for e in logged) / (sandboxes * loop_seconds), 3),
        "wait_for_samples_seconds": [round(float(s), 1) for s in metrics["timing_s/gen"]],
    }
    figures["staleness_mean"] = [round(float(s), 2) for s in metrics[f"{STALENESS}/mean"]]
    figures["staleness_max"] = [int(s) for s in metrics[f"{STALENESS}/max"]]
    if "rollout/in_flight_while_training" in metrics:  # async mode only
        figures["in_flight_while_training"] = [int(s) for s in metrics["rollout/in_flight_while_training"]]
    return figures


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = report["modes"]
    colors = ["grey", "tab:blue", "tab:green", "tab:orange"][: len(modes)]
    figure, (rate, steps) = plt.subplots(1, 2, figsize=(10, 3.8))
    rate.bar(list(modes), [m["steps_per_hour"] for m in modes.values()], color=colors)
    rate.set_title("steps per hour")
    for arm, speedup in report["speedup"].items():
        rate.annotate(
            f"{speedup:.2f}x", (list(modes).index(arm), modes[arm]["steps_per_hour"]), ha="center", va="bottom"
        )
    for (arm, figures), color in zip(modes.items(), colors):
        seconds = figures["step_seconds"]
        steps.plot(range(1, len(seconds) + 1), seconds, marker="o", color=color, label=arm)
    steps.set_xlabel("step")
    steps.set_ylabel("s")
    steps.set_title("step time")
    steps.legend()
    setting = report["setting"]
    figure.suptitle(
        f"tiny model on CPU, slow_check tasks (lognormal check, median 8 s), max_staleness {setting['max_staleness']}"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--max-staleness", type=int, default=2)
    parser.add_argument("--prefetch-batches", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--output-root", type=Path, default=ROOT / "outputs" / "benchmarks")
    parser.add_argument("--rerun", action="store_true")
    args = parser.parse_args()
    from terminal_rl.config import compose

    sandboxes = int(compose("train", ["experiment=async_rollouts"]).model_hardware.sandbox_concurrency)
    arms = [("sync", "sync", 1), *((f"async-prefetch{n}", "async", n) for n in args.prefetch_batches)]
    modes = {}
    for arm, mode, prefetch in arms:
        folder = args.output_root / run_id(mode, prefetch)
        if args.rerun or not finished(folder, args.steps):
            train(args.output_root, mode, args.steps, args.max_staleness, prefetch)
        modes[arm] = measure(folder, sandboxes)
    sync = modes["sync"]["steps_per_hour"]
    report = {
        "command": "python benchmarks/async_rollouts.py " + " ".join(sys.argv[1:]),
        "setting": {"steps": args.steps, "max_staleness": args.max_staleness, "sandboxes": sandboxes},
        "modes": modes,
        "speedup": {arm: round(m["steps_per_hour"] / sync, 2) for arm, m in modes.items() if arm != "sync"},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "async_rollouts.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, RESULTS / "async_rollouts.png")
    print(json.dumps({arm: {k: m[k] for k in ("steps_per_hour", "sandbox_utilisation")} for arm, m in modes.items()}))
    print(f"async / sync steps per hour: {report['speedup']}")


if __name__ == "__main__":
    main()
