"""Learning proof: a tiny model's held-out pass rate under our GRPO pipeline, against a control.

    .venv/bin/python benchmarks/learning_proof.py [--seeds 0 1 2] [--arms ...] [--steps 20] [overrides ...]

For each seed, runs of ``python -m terminal_rl.train experiment=learning_proof`` from that seed's own
SFT warm start (conf/experiment/learning_proof.yaml): the treatment, and a control identical except
that each group's rewards are shuffled (``algorithm=grpo_shuffled``); ``--arms async`` adds the
treatment with asynchronous rollouts (``rollouts=async``). The seed draws the warm start
(``warm_start.seed``: random weights, SFT order, mistaken demonstrations; made from nothing, as on a
fresh machine) and the task sampler's draws (``task_set.split_seed``), the same for every arm of the
seed. Held-out pass rate is verl's in-training validation on 120 fixed tasks of fresh parameters,
greedy: before step 1 (the post-SFT figure) and every ``trainer.test_freq`` steps, the same tasks for
every arm and seed.

A seed's warm start is made first (once, cached; timed on its own), so an arm's minutes are its GRPO
run's. Writes ``benchmarks/results/learning_proof.json`` (every figure, the held-out pass rate per
level too, the per-phase step times and the targets) and ``learning_proof.png`` (held-out pass rate
against step, one line per seed and arm), rewritten after every arm.

Resumable per seed and arm, across sittings: an arm already in that JSON under the same config
fingerprint (its composed config, the overrides and the step count; not the code) is kept, not rerun,
so the committed JSON carries a run across fresh checkouts, unless its seed's other arm runs now
from another warm start (both arms of a seed start from the same model). Arms recorded under other
settings stay in the JSON as ``superseded``. ``--rerun`` runs the chosen seeds and arms again even
when recorded (e.g. to time every seed on one machine); the recorded ones become superseded. A finished
run in ``outputs/`` is read; an unfinished one resumes from its last checkpoint (a run directory of
other settings is refused).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from terminal_rl.analysis import load_metrics, load_trajectories, validation_score  # noqa: E402
from terminal_rl.training.warm_start import weights_digest  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ARMS = {"treatment": [], "control": ["algorithm=grpo_shuffled"], "async": ["rollouts=async"]}
# The claim's arms; ``async`` is run on request (issue 31's check that async rollouts still learn).
CLAIM_ARMS = ("treatment", "control")
# verl's per-phase timings (seconds) reported for each arm: mean over its steps.
PHASES = [
    "timing_s/step",
    "timing_s/gen",
    "timing_s/old_log_prob",
    "timing_s/ref",
    "timing_s/adv",
    "timing_s/update_actor",
    "timing_s/update_weights",
    "timing_s/testing",
    "timing_s/save_checkpoint",
]
TARGETS = {
    "mean_gain_min": 0.20,
    "seed_gain_min": 0.12,
    "control_change_max": 0.05,
    "minutes_per_seed_max": 60,
    "minutes_all_seeds_max": 180,
    # The async arm's gain may fall short of its seed's treatment by at most this much.
    "async_gain_shortfall_max": 0.10,
}


def arm_order(key: tuple[int, str]) -> tuple[int, int]:
    """Sort key of a (seed, arm): by seed, the treatment before its control."""
    return key[0], list(ARMS).index(key[1])


def run_id(seed: int, arm: str) -> str:
    return f"learning_proof_s{seed}_{arm}"


def seed_overrides(seed: int) -> list[str]:
    """What a seed sets: its own warm start and the task sampler's draws."""
    return [f"warm_start.seed={seed}", f"task_set.split_seed={seed}"]


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
    return {
        int(step): {level: float(rate) for level, rate in group.groupby("level")["passed"].mean().items()}
        for step, group in val.groupby("step")
    }


def experiment(output_root: Path, extra: list[str], name: str = "learning_proof"):
    """The train config every arm of experiment ``name`` shares (before its seed and arm overrides)."""
    from terminal_rl.config import compose

    return compose("train", [f"experiment={name}", f"run.output_root={output_root}", *extra])


def held_out_task_levels(cfg) -> dict[str, str]:
    """Held-out task id -> level, for the experiment's validation tasks."""
    from terminal_rl.tasks.prepare import train_and_val
    from terminal_rl.tasks.task_set import task_set_config

    _, val, _ = train_and_val(task_set_config(cfg.task_set))
    return {task.id: task.difficulty.value for task in val}


def fingerprint(overrides: list[str], steps: int, name: str = "learning_proof") -> str:
    """What an arm's figures depend on, as a hash: its composed config (the experiment ``name`` with the
    arm's ``overrides``; unresolved, with a fixed output root, so the same on every machine) and the
    step count. Code is not in it, nor what cannot move the figures: the warm start's check (it stops a
    run or lets it be) and the model preset's init seed (the warm start draws its own with
    ``warm_start.seed``)."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(experiment(Path("/outputs"), overrides, name))
    cfg["warm_start"].pop("check", None)
    cfg["model"].pop("init_seed", None)
    text = OmegaConf.to_yaml(cfg) + f"\nsteps={steps}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def recorded_arms(report: dict, keys: dict[str, str]) -> tuple[dict[tuple[int, str], dict], list[dict]]:
    """A previous sitting's report split into the arms recorded under this sitting's fingerprints
    (``keys``: arm -> fingerprint), by (seed, arm), and the others (kept in the report as superseded)."""
    kept, superseded = {}, list(report.get("superseded", []))
    for arm in report.get("arms", []):
        if arm.get("fingerprint") == keys.get(arm["arm"]):
            kept[arm["seed"], arm["arm"]] = with_int_steps(arm)
        else:
            superseded.append(arm)
    return kept, superseded


def set_aside(kept: dict[tuple[int, str], dict], chosen: list[tuple[int, str]], rerun: bool) -> list[dict]:
    """With ``rerun``, the recorded arms among ``chosen`` (seed, arm)s, taken out of ``kept`` to be run
    again (their records go to superseded); else none."""
    return [kept.pop(key) for key in chosen if rerun and key in kept]


def unpaired(kept: dict[tuple[int, str], dict], seeds_to_run: set[int], digest: str) -> list[tuple[int, str]]:
    """Recorded arms of the seeds about to run whose warm start was another (a fresh checkout remakes
    it): rerun with their partner, so both arms of a seed start from the same model."""
    return [
        key for key, arm in kept.items() if key[0] in seeds_to_run and arm.get("warm_start_weights_sha256") != digest
    ]


def with_int_steps(arm: dict) -> dict:
    """An arm read back from JSON, its curves keyed by step number again (JSON keys are strings)."""
    return {
        **arm,
        **{curve: {int(k): v for k, v in arm[curve].items()} for curve in ("held_out_pass_rate", "held_out_by_level")},
    }


def warm_start(cfg) -> tuple[float, dict | None]:
    """Make the arms' shared SFT warm start if missing: the minutes it took (about 0 when cached) and,
    when it fails its check, what it measured (figures and the ranges missed), else None."""
    from terminal_rl.console import Console
    from terminal_rl.preflight.job import train_job
    from terminal_rl.training.warm_start import WarmStartOutOfRange, ensure_warm_start

    start = time.time()
    try:
        ensure_warm_start(train_job(cfg).warm_start, Console(sys.stdout))
    except WarmStartOutOfRange as error:
        print(error, flush=True)
        return (time.time() - start) / 60, {"problems": error.problems, "figures": error.figures}
    return (time.time() - start) / 60, None


def run_arm(
    seed: int,
    arm: str,
    steps: int,
    output_root: Path,
    extra: list[str],
    levels: dict[str, str],
    key: str,
    warm_start_digest: str,
) -> dict:
    run_dir = output_root / run_id(seed, arm)
    done, stamp = run_dir / "benchmark_arm.json", run_dir / "benchmark_fingerprint"
    if done.is_file() and (finished := with_int_steps(json.loads(done.read_text()))).get("fingerprint") == key:
        return finished
    # verl resumes from the run's checkpoints: only those of a run under the same settings.
    if run_dir.exists() and (not stamp.is_file() or stamp.read_text() != key):
        raise SystemExit(f"{run_dir} holds a run under other settings: move it aside, or pass --output-root")
    run_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
    resumed = (run_dir / "checkpoints").exists()
    command = [
        sys.executable,
        "-m",
        "terminal_rl.train",
        "experiment=learning_proof",
        f"run.id={run_id(seed, arm)}",
        f"run.output_root={output_root}",
        *seed_overrides(seed),
        f"trainer.total_training_steps={steps}",
        *ARMS[arm],
        *extra,
    ]
    print(f"== seed {seed}, {arm}: {' '.join(command[2:])}", flush=True)
    start = time.time()
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit(f"seed {seed} {arm} failed: see {run_dir / 'logs' / 'train.log'}")
    curve = held_out(run_dir)
    if steps not in curve or 0 not in curve:
        raise SystemExit(f"seed {seed} {arm}: no held-out pass rate at step 0 and {steps} in {run_dir}/logs")
    metrics = load_metrics(run_dir)
    # minutes: this sitting's wall time (resumed: the part after the checkpoint only).
    result = {
        "seed": seed,
        "arm": arm,
        "fingerprint": key,
        "command": " ".join(command[2:]),
        "run_dir": str(run_dir),
        "minutes": (time.time() - start) / 60,
        "resumed": resumed,
        "warm_start_weights_sha256": warm_start_digest,
        "held_out_pass_rate": curve,
        "gain": curve[steps] - curve[0],
        "held_out_by_level": held_out_by_level(run_dir, levels),
        "train_pass_rate": {int(s): float(v) for s, v in metrics.get("reward/pass_rate", {}).dropna().items()},
        "phase_seconds": {p: float(metrics[p].mean()) for p in PHASES if p in metrics},
    }
    done.write_text(json.dumps(result, indent=2) + "\n")
    return with_int_steps(json.loads(done.read_text()))


def summary(arms: list[dict], seeds: list[int]) -> dict:
    """The targets, judged on the seeds whose claim arms are both done (``met`` only once all are);
    the async arm against its seed's treatment where both are done."""
    by = {(a["seed"], a["arm"]): a for a in arms}
    pending = [s for s in seeds if not all((s, arm) in by for arm in CLAIM_ARMS)]
    async_shortfall = {
        str(s): by[s, "treatment"]["gain"] - by[s, "async"]["gain"]
        for s in seeds
        if (s, "async") in by and (s, "treatment") in by
    }
    async_report = {
        "async_shortfall": async_shortfall,
        "async_met": {s: d <= TARGETS["async_gain_shortfall_max"] for s, d in async_shortfall.items()},
    }
    seeds = [s for s in seeds if s not in pending]
    if not seeds:
        return {"seeds_pending": pending, **async_report}
    gains = [by[s, "treatment"]["gain"] for s in seeds]
    controls = [by[s, "control"]["gain"] for s in seeds]
    minutes = [by[s, "treatment"]["minutes"] + by[s, "control"]["minutes"] for s in seeds]
    return {
        "post_sft_pass_rate": {str(s): by[s, "treatment"]["held_out_pass_rate"][0] for s in seeds},
        "treatment_gain": dict(zip(map(str, seeds), gains)),
        "mean_treatment_gain": sum(gains) / len(gains),
        "control_change": dict(zip(map(str, seeds), controls)),
        "minutes_per_seed": dict(zip(map(str, seeds), minutes)),
        "minutes_all_seeds": sum(minutes),
        "seeds_pending": pending,
        "met": None
        if pending
        else {
            "mean_gain": sum(gains) / len(gains) >= TARGETS["mean_gain_min"],
            "every_seed_gain": min(gains) >= TARGETS["seed_gain_min"],
            "control_flat": max(abs(c) for c in controls) <= TARGETS["control_change_max"],
            "minutes_per_seed": max(minutes) <= TARGETS["minutes_per_seed_max"],
            "minutes_all_seeds": sum(minutes) <= TARGETS["minutes_all_seeds_max"],
        },
        **async_report,
    }


def plot(arms: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    colours = plt.get_cmap("tab10")
    seeds = sorted({arm["seed"] for arm in arms})
    for arm in arms:
        steps = sorted(arm["held_out_pass_rate"])
        # Each later seed drawn thinner, so equal curves show as nested lines instead of hiding each other.
        rank = seeds.index(arm["seed"])
        ax.plot(
            steps,
            [arm["held_out_pass_rate"][s] for s in steps],
            # The async arm hollow and on top, so it shows where it matches its seed's treatment.
            marker={"treatment": "o", "control": "s", "async": "^"}[arm["arm"]],
            markerfacecolor="white" if arm["arm"] == "async" else colours(arm["seed"]),
            zorder=3 if arm["arm"] == "async" else 2,
            color=colours(arm["seed"]),
            linewidth=(4.5 - 1.4 * rank) * (0.5 if arm["arm"] == "async" else 1),
            markersize=11 - 3 * rank,
            linestyle={"treatment": "-", "control": "--", "async": ":"}[arm["arm"]],
            label=f"seed {arm['seed']} {arm['arm']}",
        )
    ax.set(
        xlabel="GRPO step",
        ylabel="held-out pass rate (greedy)",
        ylim=(0, 1),
        title="Tiny model on write_value: GRPO vs shuffled-reward control",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncols=2)
    fig.savefig(path, dpi=120)


def reproducing_commands(arms: list[dict], steps: int, overrides: list[str]) -> list[str]:
    """The commands that make every recorded figure from scratch: one per set of arms, with the seeds
    recorded with that set (a sitting may run only some arms, e.g. async on the first seed only)."""
    by_seed: dict[int, list[str]] = {}
    for arm in ARMS:
        for record in arms:
            if record["arm"] == arm:
                by_seed.setdefault(record["seed"], []).append(arm)
    groups: dict[tuple[str, ...], list[int]] = {}
    for seed in sorted(by_seed):
        groups.setdefault(tuple(by_seed[seed]), []).append(seed)
    return [
        " ".join(
            ["benchmarks/learning_proof.py", "--seeds", *map(str, seeds), "--arms", *arm_set, "--steps", str(steps)]
            + overrides
        )
        for arm_set, seeds in groups.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARMS),
        default=list(CLAIM_ARMS),
        help="run only these arms now (the report keeps the others already recorded)",
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="run the chosen seeds and arms again even if recorded (the records become superseded)",
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--output-root", type=Path, default=ROOT / "outputs")
    parser.add_argument("--out", type=Path, default=RESULTS / "learning_proof")
    parser.add_argument("overrides", nargs="*", help="more train overrides, for every run")
    args = parser.parse_args()
    keys = {arm: fingerprint([*ARMS[arm], *args.overrides], args.steps) for arm in ARMS}
    json_path = args.out.with_suffix(".json")
    previous = json.loads(json_path.read_text()) if json_path.is_file() else {}
    results, superseded = recorded_arms(previous, keys)
    chosen = [(seed, arm) for seed in args.seeds for arm in args.arms]
    superseded += set_aside(results, chosen, args.rerun)
    to_run = [key for key in chosen if key not in results]
    # Per seed: measured when this sitting makes its warm start, else the sitting's that made it.
    warm_minutes = previous.get("warm_start_minutes") if isinstance(previous.get("warm_start_minutes"), dict) else {}
    # Seeds whose warm start failed its check: no arm trains on them; kept, with their figures.
    failed_checks = previous.get("warm_starts_out_of_range", {})
    seeds = sorted(set(args.seeds) | {seed for seed, _ in results})

    def write_report() -> None:
        arms = [results[k] for k in sorted(results, key=arm_order)]
        report = {
            "commands": reproducing_commands(arms, args.steps, args.overrides),
            "fingerprints": keys,
            "targets": TARGETS,
            "warm_start_minutes": warm_minutes,
            "summary": summary(arms, [s for s in seeds if str(s) not in failed_checks]),
            "warm_starts_out_of_range": failed_checks,
            "arms": arms,
            "superseded": superseded,
            # Fingerprint changes that could not move recorded figures, each with why (kept as made).
            "rekeyed": previous.get("rekeyed", []),
        }
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=2) + "\n")
        plot(arms, args.out.with_suffix(".png"))

    for seed in sorted({seed for seed, _ in to_run}):
        cfg = experiment(args.output_root, [*seed_overrides(seed), *args.overrides])
        cached = (Path(cfg.model.path) / "config.json").is_file()
        minutes, failed = warm_start(cfg)
        if not cached or str(seed) not in warm_minutes:
            warm_minutes[str(seed)] = minutes
        failed_checks.pop(str(seed), None)
        if failed:
            failed_checks[str(seed)] = failed
            write_report()
            continue
        digest = weights_digest(Path(cfg.model.path))[:16]  # as the results record it
        seed_arms = [key for key in to_run if key[0] == seed]
        for key in unpaired(results, {seed}, digest):
            superseded.append(results.pop(key))
            seed_arms.append(key)
        levels = held_out_task_levels(cfg)
        for key in sorted(seed_arms, key=arm_order):
            results[key] = run_arm(*key, args.steps, args.output_root, args.overrides, levels, keys[key[1]], digest)
            write_report()  # after every arm, so a stopped sitting keeps what it finished
    if results and not to_run:
        write_report()  # nothing to run: the recorded arms judged against today's targets
    print(json.dumps(summary(list(results.values()), seeds), indent=2))


if __name__ == "__main__":
    main()
