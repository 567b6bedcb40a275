"""Learning proof, second rung: RL finds a step the demonstrations never showed, over several turns.

    .venv/bin/python benchmarks/learning_proof_multiturn.py [--sft-seeds 0 1] [--rl-seeds 0 1] [--arms ...]
    .venv/bin/python benchmarks/learning_proof_multiturn.py --rebuild     (JSON and PNG from the raw files)

A run is one SFT seed (its own warm start, ``warm_start.seed``) and one RL seed (the task sampler's
draws, ``task_set.split_seed``); each runs four arms of ``experiment=learning_proof_multiturn`` from its
warm start: ``grpo``, ``mt_grpo`` (turn-level credit), ``shuffled`` (each group's rewards shuffled: must
stay flat) and ``negated`` (rewards negated: must fall). Per arm, from logged data only:

- sampled held-out pass@1 (4 samples per task at the training temperature: verl's validation) at
  every validation, overall and per level; the primary figure;
- greedy held-out pass rate after SFT (the warm start's check) and after the last step (the last
  checkpoint merged and played greedy on the same tasks);
- the folder step's teacher-forced margin (``training/action_margin.py``): log p(make the folder) -
  log p(done) after a failed write, on every held-out hard task, at every checkpoint (no sandbox);
- KL to the warm start, gradient norm, mean |advantage|, PPO clip fraction, and turn-credit spread
  (``mt_grpo``), means over steps.

The step-0 validation (the warm start, the same for every arm of a run) is played once per run: later
arms take it from another recorded arm of the run on the same warm start and settings
(``step_zero_from`` in their records).

Before a run's arms, the warm start's probability of the folder step after the failed write is measured
and held against ``--min-log-prob``: a step GRPO never samples gets no advantage, so a warm start that
leaves it out of reach stops the benchmark, as one that failed its check does (with both figures).

Each finished arm's raw figures go to ``benchmarks/results/learning_proof_multiturn/<run>_<arm>/`` (``--out``)
(metrics per step in ``logs/``, validation episodes' scores, margins, greedy figures, the arm's record); the JSON and
PNG are made from those files alone, so ``--rebuild`` remakes them on any machine. Resumable per run and
arm: an arm whose raw record has this sitting's fingerprint is kept.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from learning_proof import fingerprint, warm_start  # noqa: E402

from terminal_rl.analysis import load_metrics, load_trajectories, validation_score  # noqa: E402
from terminal_rl.training.warm_start import CHECK_FILE, held_out_versions, weights_digest  # noqa: E402

EXPERIMENT = "learning_proof_multiturn"
RESULTS = ROOT / "benchmarks" / "results"
ARMS = {
    "grpo": [],
    "mt_grpo": ["algorithm=mt_grpo"],
    "shuffled": ["algorithm=grpo_shuffled"],
    "negated": ["algorithm=grpo_negated"],
}
# Means over steps of these logged metrics, per arm.
DIAGNOSTICS = {
    "kl": "actor/kl_loss",
    "grad_norm": "actor/grad_norm",
    "abs_advantage": "advantage/abs_mean",
    "clip_fraction": "actor/pg_clipfrac",
    "turn_spread": "advantage/turn_spread",
}
TARGETS = {"grpo_mean_gain_min": 0.15, "control_change_max": 0.05, "minutes_per_run_max": 90}
# Run-level tests (a run is the unit: its arms share a warm start and task draws): name -> (arm,
# baseline arm or None for step 0, margin): per run, the arm's change minus the baseline's minus the margin.
CONTRASTS = {
    "grpo_gain": ("grpo", None, 0.0),
    "grpo_gain_over_target": ("grpo", None, TARGETS["grpo_mean_gain_min"]),
    "grpo_vs_shuffled": ("grpo", "shuffled", 0.0),
    "mt_grpo_vs_grpo": ("mt_grpo", "grpo", 0.0),
}
BOOTSTRAP_DRAWS = 2000


def run_name(sft_seed: int, rl_seed: int) -> str:
    return f"sft{sft_seed}_rl{rl_seed}"


def run_overrides(sft_seed: int, rl_seed: int) -> list[str]:
    return [f"warm_start.seed={sft_seed}", f"task_set.split_seed={rl_seed}"]


def config(output_root: Path, overrides: list[str]):
    from terminal_rl.config import compose

    return compose("train", [f"experiment={EXPERIMENT}", f"run.output_root={output_root}", *overrides])


def sampled_curve(metrics) -> dict[int, float]:
    """step -> held-out pass rate of verl's validation (sampled, mean over its n samples per task)."""
    column = next((c for c in metrics.columns if (v := validation_score(c)) and v[1] == "pass rate"), None)
    return {} if column is None else {int(s): float(v) for s, v in metrics[column].dropna().items()}


def held_out(cfg):
    """The run's warm-start plan and its held-out tasks (the same for every arm of the run)."""
    from terminal_rl.preflight.job import train_job
    from terminal_rl.tasks.prepare import train_and_val

    plan = train_job(cfg).warm_start
    return plan, train_and_val(plan.task_set)[1]


def decisions_for(cfg, plan, val, work: Path):
    """The folder step's decision on every held-out hard task: the task's mistake (the write without
    the folder) played in a sandbox, its last turn ``<done/>``, against the solution's missing command."""
    from terminal_rl.agent.evaluation import read_results
    from terminal_rl.agent.tokens import ChatTokenizer, load_tokenizer
    from terminal_rl.tasks.demonstrations import demonstration_turns, demonstrations
    from terminal_rl.training.action_margin import decision
    from terminal_rl.training.warm_start import run_app
    from terminal_rl.training.warm_start_check import script_commands

    hard = [t for t in val if t.difficulty.value == "hard"]
    results = work / "decisions" / "results.jsonl"
    played = {(e.task_id, e.content_hash) for e in read_results(results)}
    if results.is_file() and played != {(t.id, t.content_hash) for t in hard}:
        shutil.rmtree(results.parent)  # played on other held-out tasks, or on these before their family changed
    if not results.is_file():
        script = work / "decisions" / "mistakes.json"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(json.dumps(demonstrations(hard, plan.protocol, {"hard": 1.0}, 0)))
        scripted = {"policy": "scripted", "policy.script": str(script), "serve": None, "serve.model": None}
        scripted |= {"policy.temperature": None, "policy.enable_thinking": None}
        run_app("evaluate", evaluate_overrides(plan, hard, results, scripted), work)
    chat = ChatTokenizer(load_tokenizer(str(Path(cfg.model.path))), plan.enable_thinking)
    by_id = {t.id: t for t in hard}
    made = []
    for episode in sorted(read_results(results), key=lambda t: t.task_id):
        task = by_id[episode.task_id]
        if episode.messages[-1]["content"] != demonstration_turns("", plan.protocol)[-1]:
            raise RuntimeError(f"{results}: {task.id}'s scripted mistake did not end as scripted: delete it, run again")
        skipped = [c for c in script_commands(task.solution) if c not in script_commands(task.metadata["mistake"])]
        right = demonstration_turns(skipped[0], plan.protocol)[0]
        made.append(decision(episode.messages, right, chat, cfg.agent.history))
    return made


def evaluate_overrides(plan, tasks, results: Path, changes: dict[str, str | None]) -> list[str]:
    """The warm start check's evaluate overrides (its held-out tasks, agent, model preset, greedy on
    the CPU) for ``tasks``, with ``changes``: a key set to a value, or dropped (None)."""
    from terminal_rl.training.warm_start import check_overrides

    kept = [o for o in check_overrides(plan, tasks, results) if o.split("=", 1)[0] not in changes]
    return kept + [f"{key}={value}" for key, value in changes.items() if value is not None]


def causal_lm(model_dir: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()


def margin_at(model_dir: Path, decisions) -> float:
    from terminal_rl.training.action_margin import margins

    values = margins(causal_lm(model_dir), decisions)
    return sum(values) / len(values)


def reach_at(model_dir: Path, decisions) -> float:
    """log of the mean probability (over the held-out hard tasks) that a sampled episode takes the
    folder step after the failed write: the rate at which GRPO's rollouts can find it."""
    from terminal_rl.training.action_margin import right_log_probs

    values = right_log_probs(causal_lm(model_dir), decisions)
    return math.log(sum(math.exp(v) for v in values) / len(values))


def reachable(log_prob: float, minimum: float, run: str) -> None:
    """Stop the benchmark before any arm when the warm start leaves the folder step out of sampling's
    reach: a step GRPO never samples gets no advantage. ``log_prob``: ``reach_at``'s, nats."""
    if not log_prob >= minimum:  # NaN too
        raise SystemExit(
            f"{run}: the warm start takes the folder step with log-probability {log_prob:.1f} after the failed "
            f"write, below --min-log-prob {minimum:g}: about once in {math.exp(min(-log_prob, 700.0)):.3g} hard "
            "episodes, so GRPO cannot find it; change the warm start's design "
            "(experiments/learning_proof_multiturn/README.md)"
        )


def merged_checkpoint(run_dir: Path, step: int, output_root: Path) -> Path:
    """The run's checkpoint of ``step`` as a Hugging Face folder (the export app, once)."""
    target = run_dir / "hf" / f"global_step_{step}"
    if not (target / "config.json").is_file():
        command = ["-m", "terminal_rl.export", f"run.id={run_dir.name}", f"run.output_root={output_root}"]
        subprocess.run([sys.executable, *command, f"step={step}"], cwd=ROOT, check=True)
    return target


def saved_steps(run_dir: Path) -> list[int]:
    """The steps of the run's kept checkpoints (verl's ``checkpoints/global_step_<n>`` folders)."""
    folders = (run_dir / "checkpoints").glob("global_step_*")
    return sorted(int(step) for f in folders if (step := f.name.removeprefix("global_step_")).isdigit())


def greedy_figures(plan, val, model_dir: Path, run_dir: Path) -> dict:
    """``model_dir`` greedy on the held-out tasks ``val``, as the warm start's check plays them: per level."""
    from terminal_rl.agent.evaluation import read_results
    from terminal_rl.training.warm_start import run_app
    from terminal_rl.training.warm_start_check import level_figures

    results = run_dir / "greedy" / "results.jsonl"
    if not results.is_file():
        served = {"serve.model": str(model_dir), "run.id": run_dir.name}
        run_app("evaluate", evaluate_overrides(plan, val, results, served), run_dir)
    return level_figures(read_results(results), val)


def raw_folder(out: Path) -> Path:
    """Where the raw files of the report ``out`` (.json, .png) are: the folder of the same name."""
    return out.parent / out.stem


def step_zero_arm(folder: Path, run: str, arm: str, weights: str, keys: dict[str, str]) -> Path | None:
    """Another arm of ``run`` recorded in ``folder`` (the first in ``ARMS`` order) whose step 0 played
    these warm-start weights under this sitting's settings (``keys``: arm -> fingerprint): every arm of a
    run starts from them on the same held-out tasks, so one step-0 validation serves all (240 episodes,
    about 6 min, saved per later arm)."""
    for other in ARMS:
        path = folder / f"{run}_{other}" / "arm.json"
        record = json.loads(path.read_text()) if other != arm and path.is_file() else {}
        if record.get("warm_start_weights") == weights and record.get("fingerprint") == keys[other]:
            return path.parent
    return None


def with_step_zero_of(shared: Path, metrics: pd.DataFrame, episodes: list[dict]) -> tuple[pd.DataFrame, list[dict]]:
    """An arm's metrics (step-indexed) and validation episodes with step 0's taken from ``shared``'s raw files."""
    step_zero = [json.loads(line) for line in (shared / "validation.jsonl").read_text().splitlines()]
    metrics = pd.concat([load_metrics(shared).loc[[0]], metrics.drop(index=0, errors="ignore")])
    return metrics, [e for e in step_zero if e["step"] == 0] + [e for e in episodes if e["step"] != 0]


def run_arm(sft_seed: int, rl_seed: int, arm: str, args, keys: dict[str, str], decisions, cfg, plan, val) -> dict:
    """Train the arm (resuming a stopped one), then write its raw figures; returns its record.
    ``keys``: each arm's fingerprint under this sitting's settings."""
    key = keys[arm]
    raw = raw_folder(args.out) / f"{run_name(sft_seed, rl_seed)}_{arm}"
    if (raw / "arm.json").is_file() and json.loads((raw / "arm.json").read_text())["fingerprint"] == key:
        return json.loads((raw / "arm.json").read_text())
    run_id = f"{EXPERIMENT}_{run_name(sft_seed, rl_seed)}_{arm}"
    run_dir = args.output_root / run_id
    stamp = run_dir / "benchmark_fingerprint"
    if run_dir.exists() and (not stamp.is_file() or stamp.read_text() != key):
        raise SystemExit(f"{run_dir} holds a run under other settings: move it aside, or pass --output-root")
    run_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
    weights = weights_digest(Path(cfg.model.path))
    shared = step_zero_arm(raw.parent, run_name(sft_seed, rl_seed), arm, weights, keys)
    marker = run_dir / "checkpoints" / "latest_checkpointed_iteration.txt"
    resumed_from = int(marker.read_text()) if marker.is_file() else 0
    overrides = [
        f"run.id={run_id}",
        f"run.output_root={args.output_root}",
        *run_overrides(sft_seed, rl_seed),
        f"trainer.total_training_steps={args.steps}",
        *ARMS[arm],
        # Only on a fresh start: resumed, verl's "before train" validation is the resumed step's, which
        # the stopped launch may have checkpointed without validating (v1/trainer_base.py l. 439-445, 481-496).
        *(["trainer.val_before_train=false"] if shared and not resumed_from else []),
        *args.overrides,
    ]
    print(f"== {run_name(sft_seed, rl_seed)} {arm}: {' '.join(overrides)}", flush=True)
    start = time.time()
    command = [sys.executable, "-m", "terminal_rl.train", f"experiment={EXPERIMENT}", *overrides]
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit(f"{run_id} failed: see {run_dir / 'logs' / 'train.log'}")
    levels = {task.id: task.difficulty.value for task in val}
    episodes = [
        {"step": int(row.step), "task_id": row.task_id, "level": levels[row.task_id], "score": row.score}
        for row in load_trajectories(run_dir).query("split == 'val'").itertuples()
    ]
    metrics = load_metrics(run_dir)
    if shared:
        metrics, episodes = with_step_zero_of(shared, metrics, episodes)
    steps = sorted(sampled_curve(metrics))
    if not steps or steps[0] != 0 or steps[-1] != args.steps:
        raise SystemExit(f"{run_id}: no held-out pass rate at step 0 and {args.steps} in {run_dir}/logs")
    sft_model = Path(cfg.model.path)
    saved = saved_steps(run_dir)
    if args.steps not in saved:
        raise SystemExit(f"{run_id}: no checkpoint of step {args.steps} in {run_dir / 'checkpoints'}")
    models = {0: sft_model, **{s: merged_checkpoint(run_dir, s, args.output_root) for s in saved}}
    check = json.loads((sft_model.parent.parent / CHECK_FILE).read_text())
    if check.get("held_out") != held_out_versions(val):
        raise SystemExit(f"{sft_model.parent.parent}: its check was measured on other held-out tasks: run again")
    greedy = {0: check["figures"], args.steps: greedy_figures(plan, val, models[args.steps], run_dir)}
    (raw / "logs").mkdir(parents=True, exist_ok=True)
    # As the run logs them (one launch's file), numbers only: analysis.load_metrics reads it back.
    with (raw / "logs" / "metrics.raw.jsonl").open("w") as out:
        for step, row in metrics.select_dtypes("number").iterrows():
            out.write(json.dumps({"step": int(step), "data": row.dropna().to_dict()}) + "\n")
    (raw / "validation.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    (raw / "margins.json").write_text(json.dumps({s: margin_at(m, decisions) for s, m in models.items()}) + "\n")
    (raw / "greedy.json").write_text(json.dumps(greedy) + "\n")
    record = {
        "run": run_name(sft_seed, rl_seed),
        "sft_seed": sft_seed,
        "rl_seed": rl_seed,
        "arm": arm,
        "fingerprint": key,
        "command": " ".join(command[2:]),
        "benchmark_command": args.command,
        # This sitting's minutes, training to margins: an arm resumed from a checkpoint (step > 0) ran
        # its first steps earlier.
        "minutes": (time.time() - start) / 60,
        "resumed_from_step": resumed_from,
        "step_zero_from": shared.name if shared else None,
        "warm_start_weights": weights,
    }
    (raw / "arm.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def arm_figures(raw: Path) -> dict:
    """One arm's figures, from its raw files alone."""
    record = json.loads((raw / "arm.json").read_text())
    metrics = load_metrics(raw)
    curve = sampled_curve(metrics)
    episodes = [json.loads(line) for line in (raw / "validation.jsonl").read_text().splitlines()]
    by_level: dict[int, dict[str, list[bool]]] = {}
    for e in episodes:
        by_level.setdefault(e["step"], {}).setdefault(e["level"], []).append(e["score"] == 1.0)
    first, last = min(curve), max(curve)
    greedy = json.loads((raw / "greedy.json").read_text())
    return {
        **record,
        "sampled_pass_at_1": curve,
        "change": curve[last] - curve[first],
        "change_ci95": change_interval(episodes, first, last),
        "sampled_by_level": {s: {lv: sum(v) / len(v) for lv, v in sorted(ls.items())} for s, ls in by_level.items()},
        "greedy_pass_rate": {int(s): _overall(f) for s, f in greedy.items()},
        "greedy_by_level": {int(s): {lv: f["pass_rate"] for lv, f in figs.items()} for s, figs in greedy.items()},
        "folder_step_margin": {int(s): m for s, m in json.loads((raw / "margins.json").read_text()).items()},
        "diagnostics": {name: float(metrics[c].mean()) for name, c in DIAGNOSTICS.items() if c in metrics},
    }


def change_interval(episodes: list[dict], first: int, last: int, draws: int = BOOTSTRAP_DRAWS) -> list[float] | None:
    """95% interval of the change in sampled pass@1 from step ``first`` to ``last``: a paired bootstrap
    over the held-out tasks (each task's pass rate over its samples at both steps; fixed draws, so a
    rebuild gives the same interval). Within one run: it says what another draw of held-out tasks and
    samples could give, not what another warm start or RL seed would (the run-level tests do). None
    when no task was played at both steps."""
    passed: dict[tuple[int, str], list[bool]] = {}
    for e in episodes:
        if e["step"] in (first, last):
            passed.setdefault((e["step"], e["task_id"]), []).append(e["score"] == 1.0)
    tasks = sorted({task for step, task in passed if step == first and (last, task) in passed})
    if not tasks:
        return None
    change = np.array([np.mean(passed[last, t]) - np.mean(passed[first, t]) for t in tasks])
    means = change[np.random.default_rng(0).integers(0, len(tasks), (draws, len(tasks)))].mean(axis=1)
    return [float(v) for v in np.percentile(means, [2.5, 97.5])]


def sign_flip_p(differences: list[float]) -> float:
    """One-sided exact randomisation p-value, runs as the unit: P(mean >= the observed mean) over the
    2^n sign patterns of ``differences`` (one per run), as if each were as likely positive as negative.
    Ties count (within float rounding: sums of the same terms in another order). Its least value is
    2^-n: 1/16 at four runs, so one-sided 0.05 needs five. Runs sharing an SFT seed are not
    independent, which this ignores."""
    observed = sum(differences)
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    return sum(sum(s * d for s, d in zip(signs, differences)) >= observed - 1e-12 for signs in patterns) / len(patterns)


def run_level(change: dict[str, dict[str, float]]) -> dict:
    """Each arm's change over runs (mean, sd, min, max) and ``CONTRASTS``'s tests, from ``change``
    (arm -> run -> change, every arm over the same runs)."""
    spread = {
        arm: {
            "mean": statistics.fmean(values.values()),
            "sd": statistics.stdev(values.values()) if len(values) > 1 else None,
            "min": min(values.values()),
            "max": max(values.values()),
        }
        for arm, values in change.items()
    }
    tests = {}
    for name, (arm, baseline, margin) in CONTRASTS.items():
        runs = sorted(change[arm])
        differences = [change[arm][r] - (change[baseline][r] if baseline else 0.0) - margin for r in runs]
        tests[name] = {"per_run": dict(zip(runs, differences)), "mean": statistics.fmean(differences)}
        tests[name] |= {"p_sign_flip": sign_flip_p(differences), "p_least_possible": 2.0 ** -len(runs)}
    return {"change_over_runs": spread, "tests": tests}


def _overall(figures: dict) -> float:
    episodes = sum(f["episodes"] for f in figures.values())
    return sum(f["pass_rate"] * f["episodes"] for f in figures.values()) / episodes


def summary(arms: list[dict]) -> dict:
    """The targets, per run and over runs, on the runs whose four arms are done."""
    by = {(a["run"], a["arm"]): a for a in arms}
    runs = sorted({a["run"] for a in arms})
    done = [r for r in runs if all((r, arm) in by for arm in ARMS)]
    change = {arm: {r: by[r, arm]["change"] for r in done} for arm in ARMS}
    # A run's time only where every arm ran in one sitting (a resumed arm's minutes miss its first steps).
    minutes = {
        r: sum(by[r, arm]["minutes"] for arm in ARMS)
        for r in done
        if not any(by[r, arm].get("resumed_from_step") for arm in ARMS)
    }
    report = {"runs_done": done, "runs_pending": [r for r in runs if r not in done], "change": change}
    report["runs_untimed_resumed"] = sorted(set(done) - set(minutes))
    if not done:
        return report
    level = run_level(change)
    over = level["change_over_runs"]
    return {
        **report,
        **level,
        "minutes_per_run": minutes,
        "met": {
            "grpo_mean_gain": over["grpo"]["mean"] >= TARGETS["grpo_mean_gain_min"],
            "grpo_every_run_positive": over["grpo"]["min"] > 0,
            "mt_grpo_at_least_grpo": over["mt_grpo"]["mean"] >= over["grpo"]["mean"],
            # The "control within ±5 points", read both ways: its mean over runs, and every run.
            "shuffled_flat_mean": abs(over["shuffled"]["mean"]) <= TARGETS["control_change_max"],
            "shuffled_flat_every_run": max(-over["shuffled"]["min"], over["shuffled"]["max"])
            <= TARGETS["control_change_max"],
            "negated_falls_every_run": over["negated"]["max"] < 0,
            "minutes_per_run": max(minutes.values()) <= TARGETS["minutes_per_run_max"] if minutes else None,
        },
    }


def plot(arms: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (rate, margin) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    colours = dict(zip(ARMS, plt.get_cmap("tab10").colors))
    # Colour: the arm; line and marker: the run.
    styles = dict(
        zip(sorted({a["run"] for a in arms}), itertools.cycle([("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]))
    )
    for arm in arms:
        for ax, curve in ((rate, arm["sampled_pass_at_1"]), (margin, arm["folder_step_margin"])):
            steps = sorted(curve)
            ax.plot(
                steps,
                [curve[s] for s in steps],
                linestyle=styles[arm["run"]][0],
                marker=styles[arm["run"]][1],
                color=colours[arm["arm"]],
                alpha=0.8,
                label=f"{arm['run']} {arm['arm']}",
            )
    rate.set(
        xlabel="GRPO step", ylabel="held-out pass@1 (4 samples, T=1)", ylim=(0, 1), title="Sampled held-out pass rate"
    )
    margin.set(
        xlabel="GRPO step", ylabel="log p(mkdir) - log p(done), nats", title="Folder step, teacher-forced (hard tasks)"
    )
    for ax in (rate, margin):
        ax.grid(alpha=0.3)
    rate.legend(fontsize=7, ncols=2)
    fig.savefig(path, dpi=120)


def rebuild(out: Path) -> dict:
    """The JSON and PNG from the raw files alone; ``commands``: the benchmark's invocations that made
    the arms."""
    folder = raw_folder(out)
    arms = [arm_figures(record.parent) for record in sorted(folder.glob("*/arm.json"))]
    commands = sorted({arm["benchmark_command"] for arm in arms})
    report = {"commands": commands, "targets": TARGETS, "summary": summary(arms), "arms": arms}
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    if arms:
        plot(arms, out.with_suffix(".png"))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sft-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rl-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--min-log-prob",
        type=float,
        default=-6.0,
        help="the least log-probability (nats) of the folder step after the failed write a warm start may "
        "leave: an episode that writes again meets that decision two or three times, a step samples ~14 hard "
        "episodes, and design 5's warm start, at -5.2, had it found within 4 steps",
    )
    parser.add_argument("--output-root", type=Path, default=ROOT / "outputs")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / EXPERIMENT, help="the report (.json, .png) and its raw folder"
    )
    parser.add_argument("--rebuild", action="store_true", help="only remake the JSON and PNG from the raw files")
    parser.add_argument("overrides", nargs="*", help="more train overrides, for every run")
    args = parser.parse_args()
    out = args.out
    args.command = " ".join(
        ["benchmarks/learning_proof_multiturn.py", "--sft-seeds", *map(str, args.sft_seeds), "--rl-seeds"]
        + [*map(str, args.rl_seeds), "--arms", *args.arms, "--steps", str(args.steps)]
        + [f"--min-log-prob={args.min_log_prob:g}", *args.overrides]
    )
    if not args.rebuild:
        for sft_seed in args.sft_seeds:
            for rl_seed in args.rl_seeds:
                cfg = config(args.output_root, [*run_overrides(sft_seed, rl_seed), *args.overrides])
                failed = warm_start(cfg)[1]
                plan, val = held_out(cfg)
                decisions = decisions_for(cfg, plan, val, Path(cfg.model.path).parent.parent)
                reach = reach_at(Path(cfg.model.path), decisions)
                if failed:  # the folder step's reach measured too: a design's two figures, before any arm
                    raise SystemExit(
                        f"{run_name(sft_seed, rl_seed)}: the warm start failed its check "
                        f"({'; '.join(failed['problems'])}); the folder step after the failed write at "
                        f"log-probability {reach:.1f}"
                    )
                reachable(reach, args.min_log_prob, run_name(sft_seed, rl_seed))
                keys = {arm: fingerprint([*ARMS[arm], *args.overrides], args.steps, EXPERIMENT) for arm in ARMS}
                for arm in args.arms:
                    run_arm(sft_seed, rl_seed, arm, args, keys, decisions, cfg, plan, val)
                    rebuild(out)  # after every arm, so a stopped sitting keeps what it finished
    print(json.dumps(rebuild(out)["summary"], indent=2))


if __name__ == "__main__":
    main()
