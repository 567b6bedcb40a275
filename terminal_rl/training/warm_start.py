"""SFT warm start before GRPO (``warm_start`` in the train config), made once and cached.

The chain is our own apps, each in its own process and each resumable:
0. ``python -m terminal_rl.models.tiny``: the ``model`` preset's random model (and tokenizer);
1. demonstrations: the train split's solutions as model turns (``tasks/demonstrations.py``,
   a disclosed ``mistake_share`` per level of them wrong in a plausible way);
2. ``python -m terminal_rl.evaluate policy=scripted``: played in real sandboxes and verified, so the
   records carry real observations and scores;
3. ``python -m terminal_rl.datasets``: SFT records in the training rendering;
4. ``python -m terminal_rl.sft``: verl's SFT trainer from the ``model`` preset's (random) weights.
The result, ``<output_root>/<warm_start.run_id>/sft/model``, is the training run's ``model.path``;
a run that finds it there starts at once. ``warm_start.json`` beside it records the settings it was
made with; a run whose settings differ is refused instead of silently starting from the wrong model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from terminal_rl.config import project_path
from terminal_rl.tasks.task_set import TaskSetConfig
from terminal_rl.training.job import WarmStartPlan


def ensure_warm_start(plan: WarmStartPlan, console) -> Path:
    """The warm-started model, made first if missing. Raises when a step of the chain fails, naming
    the step and its log."""
    from terminal_rl.tasks.demonstrations import demonstrations
    from terminal_rl.tasks.prepare import train_and_val

    warm, root = SimpleNamespace(**plan.settings), plan.output_root
    if not isinstance(warm.mistake_share, dict):
        raise ValueError(
            f"warm_start.mistake_share={warm.mistake_share} must map levels to shares, e.g. {{medium: 0.7, hard: 0.7}}"
        )
    model = root / warm.run_id / "sft" / "model"
    record = root / warm.run_id / "warm_start.json"
    wanted = settings(plan)
    if (model / "config.json").is_file():
        made = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else wanted
        if made != wanted:
            changed = sorted(key for key in wanted.keys() | made.keys() if wanted.get(key) != made.get(key))
            raise ValueError(
                f"the cached warm start {model} was made with other {', '.join(changed)} ({record}): "
                "delete that folder to remake it, or choose another warm_start.run_id"
            )
        return model
    if project_path(plan.model_path) != model:
        raise ValueError(f"warm_start makes {model}, but model.path is {plan.model_path}: point model.path at it")
    console.print(f"warm start: SFT of {warm.model} on demonstrations, once, into {model}")
    train, _, _ = train_and_val(plan.task_set)
    shares = {level: float(share) for level, share in warm.mistake_share.items()}
    scripts = demonstrations(train, plan.protocol, shares, int(warm.seed))
    script_file = root / warm.run_id / "demonstrations.json"
    script_file.parent.mkdir(parents=True, exist_ok=True)
    script_file.write_text(json.dumps(scripts, indent=1) + "\n", encoding="utf-8")
    run = [f"run.id={warm.run_id}", f"run.output_root={root}"]
    thinking = str(wanted["enable_thinking"]).lower()
    steps = [
        ["models.tiny", f"run.output_root={root}", f"model={warm.model}"],
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
            f"enable_thinking={thinking}",
            "sft.min_score=0",
        ],
        [
            "sft",
            *run,
            f"model={warm.model}",
            f"hardware={plan.hardware_name}",
            f"hardware.param_dtype={plan.param_dtype}",
            f"verl.trainer.total_epochs={warm.epochs}",
        ],
    ]
    for app, *args in steps:
        if subprocess.run([sys.executable, "-m", f"terminal_rl.{app}", *args]).returncode != 0:
            raise RuntimeError(
                f"warm start: python -m terminal_rl.{app} failed (its log: {root / warm.run_id / 'logs'})"
            )
    if not (model / "config.json").is_file():
        raise RuntimeError(f"warm start: the SFT app finished without writing {model}")
    record.write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    return model


def settings(plan: WarmStartPlan) -> dict:
    """What the warm-started model depends on (not how many episodes ran at once), kept beside it: a
    cache made otherwise is refused."""
    return {
        "warm_start": {key: value for key, value in plan.settings.items() if key != "concurrency"},
        "tasks": plan.task_set.procedural | {"path": plan.task_set.path},
        "protocol": plan.protocol,
        "enable_thinking": plan.enable_thinking,
        "param_dtype": plan.param_dtype,
    }


def procedural_overrides(task_set: TaskSetConfig) -> list[str]:
    """The training run's procedural settings (count, seed, levels...) for the evaluate app, whose
    ``task_set`` preset alone would make the preset's tasks, not the run's."""
    if task_set.format != "procedural":
        return []
    return [f"task_set.procedural.{key}={json.dumps(value)}" for key, value in task_set.procedural.items()]
