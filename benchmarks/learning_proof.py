"""Learning proof: a tiny model's held-out pass rate under our GRPO pipeline, against a control.

    .venv/bin/python benchmarks/learning_proof.py [--seeds 0 1 2] [--steps 20] [train overrides ...]

For each seed, two runs of ``python -m terminal_rl.train experiment=learning_proof`` from the same
cached SFT warm start (conf/experiment/learning_proof.yaml): the treatment, and a control identical
except that each group's rewards are shuffled (``algorithm=grpo_shuffled``). The seed sets the task
sampler's draws (``task_set.split_seed``), the same for both arms. Held-out pass rate is verl's
in-training validation on 120 fixed tasks of fresh parameters, greedy: before step 1 (the post-SFT
figure) and every ``trainer.test_freq`` steps, the same tasks for every arm and seed.

The SFT warm start is made first (once, cached; timed on its own), so an arm's minutes are its GRPO
run's. Resumable per seed and arm: a finished run is read, not rerun; an unfinished one resumes from
its last checkpoint. Writes ``benchmarks/results/learning_proof.json`` (every figure, the held-out pass
rate per level too, the per-phase step times and the targets) and ``learning_proof.png`` (held-out pass rate against step, one line per seed and arm).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from terminal_rl.analysis import load_metrics, load_trajectories, validation_score  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ARMS = {"treatment": [], "control": ["algorithm=grpo_shuffled"]}
# verl's per-phase timings (seconds) reported for each arm: mean over its steps.
PHASES = ["timing_s/step", "timing_s/gen", "timing_s/old_log_prob", "timing_s/adv", "timing_s/update_actor",
          "timing_s/update_weights", "timing_s/testing", "timing_s/save_checkpoint"]
TARGETS = {"mean_gain_min": 0.20, "seed_gain_min": 0.12, "control_change_max": 0.05, "minutes_per_seed_max": 60}


def run_id(seed: int, arm: str) -> str:
    return f"learning_proof_s{seed}_{arm}"


def held_out(run_dir: Path) -> dict[int, float]:
    """step -> held-out pass rate, from the run's logged validation metrics."""
    metrics = load_metrics(run_dir)
    column = next((c for c in metrics.columns if (v := validation_score(c)) and v[1] == "pass rate"), None)
    if column is None:
        return {}
    series = metrics[column].dropna()
    return {int(step): float(value) for step, value in series.items()}


def held_out_by_level(run_dir: Path, levels: dict[str, str]) -> dict[int, dict[str, float]]:
    """step -> level -> held-out pass rate (all tests passed), from the run's validation rollouts;
    ``levels`` maps a held-out task id to its level."""
    rollouts = load_trajectories(run_dir)
    val = rollouts[rollouts["split"] == "val"]
    if unknown := sorted(set(val["task_id"]) - set(levels)):
        raise ValueError(f"{run_dir}: validation tasks {unknown[:5]} are not the experiment's held-out tasks")
    val = val.assign(level=val["task_id"].map(levels), passed=val["score"] == 1.0)
    return {int(step): {level: float(rate) for level, rate in group.groupby("level")["passed"].mean().items()}
            for step, group in val.groupby("step")}


def experiment(output_root: Path, extra: list[str]):
    """The train config every arm shares (before its seed and arm overrides)."""
    from terminal_rl.config import compose

    return compose("train", ["experiment=learning_proof", f"run.output_root={output_root}", *extra])


def held_out_task_levels(cfg) -> dict[str, str]:
    """Held-out task id -> level, for the experiment's validation tasks."""
    from terminal_rl.tasks.prepare import train_and_val
    from terminal_rl.tasks.task_set import task_set_config

    _, val, _ = train_and_val(task_set_config(cfg.task_set))
    return {task.id: task.difficulty.value for task in val}


def warm_start(cfg) -> float:
    """Make the arms' shared SFT warm start if missing; returns the minutes it took (seconds when cached)."""
    from terminal_rl.console import Console
    from terminal_rl.training.warm_start import ensure_warm_start

    start = time.time()
    ensure_warm_start(cfg, Console(sys.stdout))
    return (time.time() - start) / 60


def run_arm(seed: int, arm: str, steps: int, output_root: Path, extra: list[str], levels: dict[str, str]) -> dict:
    run_dir = output_root / run_id(seed, arm)
    done = run_dir / "benchmark_arm.json"
    if done.is_file():
        return json.loads(done.read_text())
    command = [sys.executable, "-m", "terminal_rl.train", "experiment=learning_proof", f"run.id={run_id(seed, arm)}",
               f"run.output_root={output_root}", f"task_set.split_seed={seed}", f"trainer.total_training_steps={steps}",
               *ARMS[arm], *extra]
    print(f"== seed {seed}, {arm}: {' '.join(command[2:])}", flush=True)
    start = time.time()
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit(f"seed {seed} {arm} failed: see {run_dir / 'logs' / 'train.log'}")
    curve = held_out(run_dir)
    if steps not in curve or 0 not in curve:
        raise SystemExit(f"seed {seed} {arm}: no held-out pass rate at step 0 and {steps} in {run_dir}/logs")
    metrics = load_metrics(run_dir)
    result = {"seed": seed, "arm": arm, "run_dir": str(run_dir), "minutes": (time.time() - start) / 60,
              "held_out_pass_rate": curve, "gain": curve[steps] - curve[0],
              "held_out_by_level": held_out_by_level(run_dir, levels),
              "train_pass_rate": {int(s): float(v) for s, v in metrics.get("reward/pass_rate", {}).dropna().items()},
              "phase_seconds": {p: float(metrics[p].mean()) for p in PHASES if p in metrics}}
    done.write_text(json.dumps(result, indent=2) + "\n")
    return result


def summary(arms: list[dict], seeds: list[int]) -> dict:
    by = {(a["seed"], a["arm"]): a for a in arms}
    gains = [by[s, "treatment"]["gain"] for s in seeds]
    controls = [by[s, "control"]["gain"] for s in seeds]
    minutes = [by[s, "treatment"]["minutes"] + by[s, "control"]["minutes"] for s in seeds]
    return {
        "post_sft_pass_rate": by[seeds[0], "treatment"]["held_out_pass_rate"][0],
        "treatment_gain": dict(zip(map(str, seeds), gains)), "mean_treatment_gain": sum(gains) / len(gains),
        "control_change": dict(zip(map(str, seeds), controls)), "minutes_per_seed": dict(zip(map(str, seeds), minutes)),
        "met": {"mean_gain": sum(gains) / len(gains) >= TARGETS["mean_gain_min"],
                "every_seed_gain": min(gains) >= TARGETS["seed_gain_min"],
                "control_flat": max(abs(c) for c in controls) <= TARGETS["control_change_max"],
                "minutes_per_seed": max(minutes) <= TARGETS["minutes_per_seed_max"]},
    }


def plot(arms: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    colours = plt.get_cmap("tab10")
    for arm in arms:
        steps = sorted(arm["held_out_pass_rate"])
        ax.plot(steps, [arm["held_out_pass_rate"][s] for s in steps], marker="o", color=colours(arm["seed"]),
                linestyle="-" if arm["arm"] == "treatment" else "--", label=f"seed {arm['seed']} {arm['arm']}")
    ax.set(xlabel="GRPO step", ylabel="held-out pass rate (greedy)", ylim=(0, 1),
           title="Tiny model on write_value: GRPO vs shuffled-reward control")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncols=2)
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--output-root", type=Path, default=ROOT / "outputs")
    parser.add_argument("--out", type=Path, default=RESULTS / "learning_proof")
    parser.add_argument("overrides", nargs="*", help="more train overrides, for every run")
    args = parser.parse_args()
    cfg = experiment(args.output_root, args.overrides)
    warm_minutes = warm_start(cfg)
    levels = held_out_task_levels(cfg)
    arms = [run_arm(seed, arm, args.steps, args.output_root, args.overrides, levels)
            for seed in args.seeds for arm in ARMS]
    # JSON keys are strings: normalise the curves read back from finished arms.
    for arm in arms:
        for curve in ("held_out_pass_rate", "held_out_by_level"):
            arm[curve] = {int(k): v for k, v in arm[curve].items()}
    report = {"command": " ".join(["benchmarks/learning_proof.py", *sys.argv[1:]]), "targets": TARGETS,
              "warm_start_minutes_this_invocation": warm_minutes,
              "summary": summary(arms, args.seeds), "arms": arms}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    plot(arms, args.out.with_suffix(".png"))
    print(json.dumps(report["summary"], indent=2))


if __name__ == "__main__":
    main()
