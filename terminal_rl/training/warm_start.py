"""SFT warm start before GRPO (``warm_start`` in the train config), made once and cached.

The chain is our own apps, each in its own process and each resumable:
0. ``python -m terminal_rl.models.tiny``: the ``model`` preset's random model (and tokenizer), its
   weights drawn with ``warm_start.seed`` into ``<run>/init``;
1. demonstrations: the train split's solutions as model turns (``tasks/demonstrations.py``,
   a disclosed ``mistake_share`` per level of them wrong in a plausible way, drawn with the seed),
   of the levels in ``demonstrated_levels`` (all when unset: a level left out is never shown);
2. ``python -m terminal_rl.evaluate policy=scripted``: played in real sandboxes and verified, so the
   records carry real observations and scores;
3. ``python -m terminal_rl.datasets``: SFT records in the training rendering;
4. ``python -m terminal_rl.sft``: verl's SFT trainer from those random weights (on a CPU it draws
   nothing at random: its sampler's order has a fixed seed, ``verl/trainer/sft_trainer.py`` l. 236,
   so one machine and thread count make the same weights; another CPU's kernels round otherwise);
5. with ``warm_start.check``: ``python -m terminal_rl.evaluate policy=token serve=hf``, the SFT model
   greedy on the held-out tasks, its figures per level (``training/warm_start_check.py``) kept in
   ``warm_start_check.json`` and held against the check's ranges before any GRPO step.
The result, ``<output_root>/<warm_start.run_id>/sft/model``, is the training run's ``model.path``;
a run that finds it there starts at once. ``warm_start.json`` beside it records the settings it was
made with; a run whose settings differ, or whose task family now makes other demonstrations, is
refused instead of silently starting from the wrong model, and one whose figures are outside the
check's ranges stops with them instead of training on it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from terminal_rl.config import project_path
from terminal_rl.tasks.task_set import TaskSetConfig, validation_source
from terminal_rl.training.job import WarmStartPlan
from terminal_rl.training.warm_start_check import figures_lines, level_figures, out_of_range, validate_check


def ensure_warm_start(plan: WarmStartPlan, console) -> Path:
    """The warm-started model, made first if missing. Raises when a step of the chain fails, naming
    the step and its log."""
    warm, root = SimpleNamespace(**plan.settings), plan.output_root
    if not isinstance(warm.mistake_share, dict):
        raise ValueError(
            f"warm_start.mistake_share={warm.mistake_share} must map levels to shares, e.g. {{medium: 0.7, hard: 0.7}}"
        )
    if warm_check := plan.settings.get("check"):
        validate_check(warm_check)
        if validation_source(plan.task_set) is None:
            raise ValueError(
                "warm_start.check measures on task_set.validation, a held-out source; this task set has none"
            )
    model = root / warm.run_id / "sft" / "model"
    record = root / warm.run_id / "warm_start.json"
    wanted = settings(plan)
    if (model / "config.json").is_file():
        made = read_json(record) if record.is_file() else wanted
        if made != wanted:
            changed = sorted(key for key in wanted.keys() | made.keys() if wanted.get(key) != made.get(key))
            raise ValueError(
                f"the cached warm start {model} was made with other {', '.join(changed)} ({record}): "
                f"delete {root / warm.run_id} to remake it, or choose another warm_start.run_id"
            )
        if read_json(root / warm.run_id / "demonstrations.json") != demonstration_scripts(plan):
            raise ValueError(
                f"the cached warm start {model} was made from other demonstrations than its task set makes now "
                f"(the family's code changed since, or its demonstrations.json is gone): delete "
                f"{root / warm.run_id} to remake it, or choose another warm_start.run_id"
            )
        check_warm_start(plan, console)
        return model
    if project_path(plan.model_path) != model:
        raise ValueError(f"warm_start makes {model}, but model.path is {plan.model_path}: point model.path at it")
    console.print(f"warm start: SFT of {warm.model} on demonstrations, once, into {model}")
    # What an earlier chain under this run id left and this one must not reuse: its random weights
    # (another seed's, maybe) and its check.
    for folder in ("init", "check"):
        shutil.rmtree(root / warm.run_id / folder, ignore_errors=True)
    (root / warm.run_id / CHECK_FILE).unlink(missing_ok=True)
    scripts = demonstration_scripts(plan)
    script_file = root / warm.run_id / "demonstrations.json"
    script_file.parent.mkdir(parents=True, exist_ok=True)
    script_file.write_text(json.dumps(scripts, indent=1) + "\n", encoding="utf-8")
    run = [f"run.id={warm.run_id}", f"run.output_root={root}"]
    thinking = str(wanted["enable_thinking"]).lower()
    init = root / warm.run_id / "init"
    steps = [
        [
            "models.tiny",
            f"run.output_root={root}",
            f"model={warm.model}",
            f"out={init}",
            f"model.init_seed={warm.seed}",
        ],
        [
            "evaluate",
            *run,
            f"agent={warm.agent}",
            f"task_set={warm.task_set}",
            f"task_ids=[{','.join(scripts)}]",
            *procedural_overrides(plan.task_set),
            "policy=scripted",
            f"policy.script={script_file}",
            f"concurrency={warm.concurrency}",
        ],
        [
            "datasets",
            "command=build",
            *run,
            f"agent={warm.agent}",
            f"model={warm.model}",
            f"model.path={init}",
            f"enable_thinking={thinking}",
            "sft.min_score=0",
        ],
        ["sft", *run, *sft_overrides(plan, init)],
    ]
    for app, *args in steps:
        run_app(app, args, root / warm.run_id)
    if not (model / "config.json").is_file():
        raise RuntimeError(f"warm start: the SFT app finished without writing {model}")
    record.write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    check_warm_start(plan, console)
    return model


def sft_overrides(plan: WarmStartPlan, init: Path) -> list[str]:
    """The SFT app's settings in the chain: from the random weights ``init``, the warm start's epochs,
    the model preset's peak rate and the warm start's schedule, the run's hardware and dtype."""
    warm = SimpleNamespace(**plan.settings)
    return [
        f"model={warm.model}",
        f"model.path={init}",
        f"hardware={plan.hardware_name}",
        f"hardware.param_dtype={plan.param_dtype}",
        f"model.sft_lr={plan.sft_lr}",
        f"verl.trainer.total_epochs={warm.epochs}",
        f"++verl.optim.lr_scheduler_type={warm.lr_scheduler}",
        f"++verl.optim.lr_warmup_steps_ratio={warm.warmup_ratio}",
    ]


def run_app(app: str, args: list[str], run_dir: Path) -> None:
    """One app of the chain in its own process; raises naming it and the run's logs when it fails."""
    if subprocess.run([sys.executable, "-m", f"terminal_rl.{app}", *args]).returncode != 0:
        raise RuntimeError(f"warm start: python -m terminal_rl.{app} failed (its log: {run_dir / 'logs'})")


CHECK_FILE = "warm_start_check.json"


class WarmStartOutOfRange(RuntimeError):
    """A warm start whose held-out figures (per level) are outside ``warm_start.check``'s ranges."""

    def __init__(self, figures: dict, problems: list[str], message: str):
        super().__init__(message)
        self.figures, self.problems = figures, problems


def check_warm_start(plan: WarmStartPlan, console) -> None:
    """With ``warm_start.check``: the warm start's held-out figures held against the check's ranges;
    outside them, raises with the figures. Measured once per model and held-out set (greedy), kept in
    ``warm_start_check.json`` with the weights' digest and the held-out tasks (id and content hash):
    other weights, or other held-out tasks (another count, or a family whose code changed), are
    measured again."""
    from terminal_rl.tasks.prepare import train_and_val

    check = plan.settings.get("check")
    if not check:
        return
    run_dir = plan.output_root / plan.settings["run_id"]
    kept, digest = run_dir / CHECK_FILE, weights_digest(run_dir / "sft" / "model")
    val = train_and_val(plan.task_set)[1]
    held_out = held_out_versions(val)
    record = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
    if (record.get("weights_sha256"), record.get("held_out")) != (digest, held_out):
        console.print(f"warm start check: the SFT model, greedy, on the held-out tasks (figures kept in {kept})")
        record = {"weights_sha256": digest, "held_out": held_out, "figures": measure(plan, val, run_dir)}
        kept.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        for line in figures_lines(record["figures"]):
            console.print(line)
    if problems := out_of_range(record["figures"], check):
        raise WarmStartOutOfRange(
            record["figures"],
            problems,
            f"warm start {run_dir / 'sft' / 'model'} is outside the ranges warm_start.check needs, so GRPO "
            f"would start from a model that cannot learn what the experiment measures: {'; '.join(problems)}.\n"
            + "\n".join(figures_lines(record["figures"]))
            + f"\nMake another (warm_start.seed=N with another warm_start.run_id), or delete {run_dir} to remake it.",
        )


def held_out_versions(val: list) -> list[str]:
    """The held-out tasks as ``id@content_hash``, sorted: what a check's figures were measured on."""
    return sorted(f"{task.id}@{task.content_hash}" for task in val)


def weights_digest(model: Path) -> str:
    """sha256 over the model folder's weight files, in name order."""
    digest = hashlib.sha256()
    for path in sorted(model.glob("*.safetensors")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def measure(plan: WarmStartPlan, val: list, run_dir: Path) -> dict:
    """The SFT model greedy on the held-out tasks ``val`` (the evaluate app, served on this machine's
    CPU): figures per level. Raises when an episode failed on infrastructure (nothing is kept: run again)."""
    from terminal_rl.agent.evaluation import read_results

    results = run_dir / "check" / "results.jsonl"
    shutil.rmtree(results.parent, ignore_errors=True)  # another model's episodes, if any
    run_app("evaluate", check_overrides(plan, val, results), run_dir)
    episodes = read_results(results)
    unscored = sorted(
        {t.task_id for t in episodes if t.score is None} | {t.id for t in val} - {t.task_id for t in episodes}
    )
    if unscored:
        raise RuntimeError(
            f"warm start check: {len(unscored)} held-out episodes have no score (infrastructure; e.g. "
            f"{unscored[0]}, see {results}): run again"
        )
    return level_figures(episodes, val)


def check_overrides(plan: WarmStartPlan, val: list, results: Path) -> list[str]:
    """The evaluate app's overrides for the check: the run's held-out tasks, its agent and model preset,
    the SFT model served on the CPU, greedy."""
    warm = SimpleNamespace(**plan.settings)
    return [
        f"run.id={warm.run_id}",
        f"run.output_root={plan.output_root}",
        f"agent={warm.agent}",
        f"agent.max_turns={plan.max_turns}",
        f"model={warm.model}",
        f"task_set={warm.task_set}",
        *procedural_overrides(validation_source(plan.task_set)),
        f"task_ids=[{','.join(t.id for t in val)}]",
        "policy=token",
        "serve=hf",
        f"serve.model={plan.output_root / warm.run_id / 'sft' / 'model'}",
        "policy.temperature=0",
        f"policy.enable_thinking={str(plan.enable_thinking).lower()}",
        f"concurrency={warm.concurrency}",
        f"results_file={results}",
    ]


def demonstration_scripts(plan: WarmStartPlan) -> dict[str, list[str]]:
    """The model turns to play per train task id (step 1 of the chain): they follow the task family's
    code, so a cache made from others is stale even under the same settings."""
    from terminal_rl.tasks.demonstrations import demonstrations
    from terminal_rl.tasks.prepare import train_and_val

    warm = SimpleNamespace(**plan.settings)
    train = demonstrated(train_and_val(plan.task_set)[0], plan.settings.get("demonstrated_levels"), warm.mistake_share)
    shares = {level: float(share) for level, share in warm.mistake_share.items()}
    return demonstrations(train, plan.protocol, shares, int(warm.seed))


def read_json(path: Path):
    """``path``'s JSON, or None when there is no such file."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def demonstrated(tasks: list, levels, mistake_share) -> list:
    """The tasks of the ``levels`` demonstrated (None: every level)."""
    if levels is None:
        return tasks
    known = {task.difficulty.value for task in tasks}
    if unknown := sorted(set(levels) - known):
        raise ValueError(f"warm_start.demonstrated_levels names {unknown}; the task set's levels are {sorted(known)}")
    if undemonstrated := sorted(level for level, share in mistake_share.items() if share and level not in levels):
        raise ValueError(
            f"warm_start.mistake_share names {undemonstrated}, not in warm_start.demonstrated_levels={list(levels)}"
        )
    return [task for task in tasks if task.difficulty.value in levels]


def settings(plan: WarmStartPlan) -> dict:
    """What the warm-started model depends on (not how many episodes ran at once, nor the ranges it is
    checked against), kept beside it: a cache made otherwise is refused."""
    return {
        "warm_start": {key: value for key, value in plan.settings.items() if key not in ("concurrency", "check")},
        "tasks": plan.task_set.procedural | {"path": plan.task_set.path},
        "protocol": plan.protocol,
        "enable_thinking": plan.enable_thinking,
        "param_dtype": plan.param_dtype,
        "sft_lr": plan.sft_lr,
    }


def procedural_overrides(task_set: TaskSetConfig) -> list[str]:
    """The training run's procedural settings (count, seed, levels...) for the evaluate app, whose
    ``task_set`` preset alone would make the preset's tasks, not the run's."""
    if task_set.format != "procedural":
        return []
    return [f"task_set.procedural.{key}={json.dumps(value)}" for key, value in task_set.procedural.items()]
