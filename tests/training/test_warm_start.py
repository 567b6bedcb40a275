"""The warm start's cache and its hand-over to the evaluate app, in milliseconds (the whole chain runs in
tests/training/test_main_command.py)."""

import json

import pytest

from terminal_rl.config import compose
from terminal_rl.evaluate import select_tasks
from terminal_rl.preflight.job import train_job
from terminal_rl.tasks.prepare import train_and_val
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.training import warm_start
from terminal_rl.training.warm_start import (
    check_overrides,
    demonstrated,
    demonstration_scripts,
    ensure_warm_start,
    held_out_versions,
    procedural_overrides,
    settings,
    sft_overrides,
    weights_digest,
)
from tests.training.conftest import train_config


class Silent:
    def print(self, *args, **kwargs):
        raise AssertionError(f"a cached warm start prints nothing: {args}")


FIGURES = {level: {"pass_rate": 0.0, "able": 1.0, "episodes": 40} for level in ("easy", "medium", "hard")}
WITHIN = FIGURES | {"easy": {"pass_rate": 0.95, "able": 0.95, "episodes": 40}}


def keep_figures(model, figures, cfg) -> None:
    held_out = held_out_versions(train_and_val(train_job(cfg).warm_start.task_set)[1])
    record = {"weights_sha256": weights_digest(model), "held_out": held_out, "figures": figures}
    (model.parent.parent / "warm_start_check.json").write_text(json.dumps(record))


def cached(tmp_path, *overrides):
    """A cached warm start, its check's figures within the ranges."""
    cfg = train_config("experiment=learning_proof", f"run.output_root={tmp_path}", *overrides)
    model = tmp_path / cfg.warm_start.run_id / "sft" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    keep_figures(model, WITHIN, cfg)
    scripts = demonstration_scripts(train_job(cfg).warm_start)
    (model.parent.parent / "demonstrations.json").write_text(json.dumps(scripts))
    return cfg, model


def test_a_cache_made_with_these_settings_is_used_and_one_made_otherwise_is_refused(tmp_path):
    cfg, model = cached(tmp_path)
    record = model.parent.parent / "warm_start.json"
    record.write_text(json.dumps(settings(train_job(cfg).warm_start)))
    assert ensure_warm_start(train_job(cfg).warm_start, Silent()) == model
    other = train_config(
        "experiment=learning_proof",
        f"run.output_root={tmp_path}",
        "warm_start.mistake_share.hard=0.3",
        "task_set.procedural.count=480",
    )
    with pytest.raises(
        ValueError, match=r"made with other tasks, warm_start \(.*warm_start.json\): delete .*learning_proof_sft_s0 to"
    ):
        ensure_warm_start(train_job(other).warm_start, Silent())


def test_a_cache_whose_demonstrations_the_family_no_longer_makes_is_refused(tmp_path):
    """Same settings, other family code (a solution changed since): the cache is stale, not reused."""
    cfg, model = cached(tmp_path)
    plan = train_job(cfg).warm_start
    (model.parent.parent / "warm_start.json").write_text(json.dumps(settings(plan)))
    kept = model.parent.parent / "demonstrations.json"
    scripts = json.loads(kept.read_text())
    task_id = sorted(scripts)[0]
    kept.write_text(json.dumps(scripts | {task_id: scripts[task_id][1:]}))
    with pytest.raises(ValueError, match=r"made from other demonstrations than its task set makes now"):
        ensure_warm_start(plan, Silent())
    kept.unlink()
    with pytest.raises(
        ValueError, match=r"or its demonstrations.json is gone\): delete .*learning_proof_sft_s0 to remake it"
    ):
        ensure_warm_start(plan, Silent())


def test_a_cached_warm_start_outside_the_checks_ranges_stops_the_run_with_its_figures(tmp_path):
    cfg, model = cached(tmp_path)
    plan = train_job(cfg).warm_start
    (model.parent.parent / "warm_start.json").write_text(json.dumps(settings(plan)))
    assert ensure_warm_start(plan, Silent()) == model, "figures kept for these weights: not measured again"
    keep_figures(model, FIGURES | {"easy": {"pass_rate": 0.175, "able": 0.175, "episodes": 40}}, cfg)
    with pytest.raises(warm_start.WarmStartOutOfRange) as raised:
        ensure_warm_start(plan, Silent())
    assert raised.value.figures["easy"]["able"] == 0.175 and len(raised.value.problems) == 2
    message = str(raised.value)
    assert "easy able 0.175 is outside [0.9, 1.0]; easy pass_rate 0.175 is outside [0.9, 1.0]" in message
    assert "  easy     pass rate 0.175  able 0.175  (40 episodes)" in message
    assert "warm_start.seed=N" in message
    loose = train_config(
        "experiment=learning_proof",
        f"run.output_root={tmp_path}",
        "warm_start.check.pass_rate.easy=[0.1,1.0]",
        "warm_start.check.able.easy=[0.1,1.0]",
    )
    assert ensure_warm_start(train_job(loose).warm_start, Silent()) == model, "the ranges are not the model's settings"


def test_weights_without_figures_of_their_own_are_measured_once_and_shown(tmp_path, monkeypatch):
    cfg, model = cached(tmp_path)
    plan = train_job(cfg).warm_start
    (model.parent.parent / "warm_start.json").write_text(json.dumps(settings(plan)))
    (model / "model.safetensors").write_bytes(b"other weights")  # e.g. remade after the figures were kept
    measured, shown = [], []
    monkeypatch.setattr(warm_start, "measure", lambda plan, val, run_dir: measured.append(len(val)) or WITHIN)
    console = type("Console", (), {"print": lambda self, line: shown.append(line)})()
    assert ensure_warm_start(plan, console) == model
    assert measured == [120] and shown[0].startswith("warm start check: the SFT model, greedy")
    assert shown[1:] == [
        "  easy     pass rate 0.950  able 0.950  (40 episodes)",
        "  medium   pass rate 0.000  able 1.000  (40 episodes)",
        "  hard     pass rate 0.000  able 1.000  (40 episodes)",
    ]
    ensure_warm_start(plan, Silent())
    assert measured == [120], "kept with the new weights' digest"
    fewer = train_config(
        "experiment=learning_proof", f"run.output_root={tmp_path}", "task_set.validation.procedural.count=60"
    )
    ensure_warm_start(train_job(fewer).warm_start, console)
    assert measured == [120, 60], "figures of other held-out tasks are not these tasks' figures"


def test_the_check_plays_the_runs_held_out_tasks_greedy_as_its_validation_does(tmp_path):
    cfg = train_config(
        "experiment=learning_proof", f"run.output_root={tmp_path}", "task_set.validation.procedural.count=12"
    )
    plan = train_job(cfg).warm_start
    _, val, _ = train_and_val(plan.task_set)
    evaluate = compose("evaluate", check_overrides(plan, val, tmp_path / "results.jsonl"))
    assert [(t.id, t.prompt) for t in select_tasks(evaluate)] == [(t.id, t.prompt) for t in val]
    assert evaluate.policy.temperature == 0 and evaluate.policy.kind == "token" and evaluate.serve.kind == "command"
    assert evaluate.agent.max_turns == cfg.agent.max_turns == 2
    assert evaluate.agent.max_context_tokens == cfg.model.context.max_context_tokens
    assert evaluate.serve.model == str(tmp_path / "learning_proof_sft_s0" / "sft" / "model")


def test_a_malformed_check_is_refused_before_anything_is_made(tmp_path):
    cfg = train_config("experiment=learning_proof", f"run.output_root={tmp_path}", "warm_start.check.able.easy=[0.9]")
    with pytest.raises(ValueError, match=r"warm_start.check.able.easy=\[0.9\] must be \[low, high\]"):
        ensure_warm_start(train_job(cfg).warm_start, Silent())
    assert not (tmp_path / "learning_proof_sft_s0").exists()


def test_the_demonstrations_are_played_on_the_training_runs_own_tasks():
    """The evaluate app, given the warm start's overrides, selects exactly the run's training tasks (the
    preset alone would make its own 320 tasks under the same ids: other tasks once the levels differ)."""
    cfg = train_config(
        "experiment=learning_proof", "task_set.procedural.count=48", "task_set.procedural.levels=[hard,easy]"
    )
    train, _, _ = train_and_val(task_set_config(cfg.task_set))
    ids = [t.id for t in train]
    evaluate = compose(
        "evaluate",
        ["task_set=write_value", *procedural_overrides(task_set_config(cfg.task_set)), f"task_ids=[{','.join(ids)}]"],
    )
    assert [(t.id, t.prompt) for t in select_tasks(evaluate)] == [(t.id, t.prompt) for t in train]
    preset = compose("evaluate", ["task_set=write_value", f"task_ids=[{','.join(ids)}]"])
    assert [t.prompt for t in select_tasks(preset)] != [t.prompt for t in train], "the overrides matter"


def test_a_single_mistake_share_is_refused_by_name(tmp_path):
    cfg = train_config(
        "experiment=learning_proof",
        f"run.output_root={tmp_path}",
        "warm_start.mistake_share=0.6",
        "task_set.procedural.count=30",
    )
    with pytest.raises(ValueError, match=r"warm_start.mistake_share=0.6 must map levels to shares"):
        ensure_warm_start(train_job(cfg).warm_start, Silent())


def test_the_second_rung_demonstrates_easy_and_medium_and_never_hard():
    """experiment=learning_proof_multiturn: no hard task is demonstrated (the failed write is a state SFT
    never shows); every level's tasks are when demonstrated_levels is unset (the first rung)."""
    cfg = train_config("experiment=learning_proof_multiturn", "task_set.procedural.count=30")
    train, _, _ = train_and_val(task_set_config(cfg.task_set))
    warm = cfg.warm_start
    shown = demonstrated(train, warm.demonstrated_levels, warm.mistake_share)
    assert {t.difficulty.value for t in shown} == {"easy", "medium"} and len(shown) == 20
    assert demonstrated(train, None, {"hard": 0.7}) == train
    with pytest.raises(ValueError, match=r"mistake_share names \['hard'\], not in warm_start.demonstrated_levels"):
        demonstrated(train, ["easy", "medium"], {"medium": 0.8, "hard": 1.0})
    with pytest.raises(ValueError, match=r"demonstrated_levels names \['expert'\]; the task set's levels are"):
        demonstrated(train, ["easy", "expert"], {})


def test_the_sft_app_takes_the_chains_schedule(tmp_path):
    """The SFT step's overrides compose in the sft app (its verl section is a struct) and reach the
    optimizer section it hands to verl."""
    plan = train_job(train_config("experiment=learning_proof", f"run.output_root={tmp_path}")).warm_start
    sft = compose("sft", ["run.id=warm", f"run.output_root={tmp_path}", *sft_overrides(plan, tmp_path / "init")])
    assert sft.verl.optim.lr_scheduler_type == "cosine" and sft.verl.optim.lr_warmup_steps_ratio == 0.05
    assert sft.verl.optim.lr == 1e-3, "the model preset's peak rate (tiny_learner)"
    assert sft.verl.trainer.total_epochs == 24 and sft.model.path == str(tmp_path / "init")
