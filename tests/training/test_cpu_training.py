"""The main job end to end on CPU: real verl GRPO steps with our agent loop in real Docker sandboxes on
real tasks, with the judge_anneal curriculum and online-variance filtering (the judge is a local
OpenAI-compatible test server), wandb offline logging, a checkpoint, and a resume that continues
from it. One run (and its resume, the ``cpu_run`` fixture in tests/conftest.py) is shared by every test
here and by the notebook test."""

import json

import pytest

from terminal_rl.analysis import load_metrics
from terminal_rl.sandbox.docker_client import docker_client
from terminal_rl.sandbox.owner import MANAGED, RUN_ID

pytestmark = [pytest.mark.verl, pytest.mark.docker]


def metrics(run_dir):
    """Step -> the metrics logged at that step, over every launch (a resume writes a new file)."""
    return {step: row.dropna().to_dict() for step, row in load_metrics(run_dir).iterrows()}


def test_grpo_steps_log_reward_components_and_validation(cpu_run):
    steps = metrics(cpu_run["dir"])
    assert {1, 2, 3} <= set(steps)
    step = steps[2]
    for key in ("reward/tests/mean", "reward/judge/mean", "reward/format/mean", "reward/exec/mean", "reward/weight/tests",
                "rollout/masked_fraction", "rollout/ended/parse_errors", "behaviour/parse_error_rate",
                "actor/pg_loss", "critic/score/mean", "timing_s/step", "judge/calls"):
        assert key in step, key


def test_curriculum_stage_weights_and_filter_fractions_are_logged(cpu_run):
    steps = metrics(cpu_run["dir"])
    first = steps[1]
    assert first["curriculum/stage"] == 0.0 and first["curriculum/share/easy"] == 0.5
    assert first["curriculum/judge_weight/easy"] == 0.5 and first["curriculum/judge_weight/extremely_hard"] == 0.0
    assert 0.0 < first["reward/weight/judge"] <= 0.5, "stage-0 samples are scored with the judge blended in"
    assert first["reward/weight/tests"] + first["reward/weight/judge"] == 1.0
    for key in ("rollout/variance_reward", "rollout/variance_tests", "rollout/zero_variance_tests", "rollout/filtered"):
        assert key in first, key
    assert cpu_run["judge_calls"] > 0
    assert (cpu_run["dir"] / "logs" / "curriculum.png").is_file()


def test_curriculum_state_is_checkpointed_and_restored(cpu_run):
    state = json.loads((cpu_run["dir"] / "checkpoints" / "global_step_2" / "curriculum.json").read_text())
    assert state["state"]["steps_in_stage"] == 2 and state["sampler"]["draws"] >= 4
    assert metrics(cpu_run["dir"])[3]["curriculum/steps_in_stage"] == 3.0, "the resumed run continued the stage"
    log = cpu_run["first"].stdout + cpu_run["first"].stderr
    assert "val-core/terminal_bench_rl/acc/mean@1" in log, "in-training validation ran on the val split"
    assert "val-aux/terminal_bench_rl/pass/mean@1" in log


def test_rollouts_ran_in_real_sandboxes_and_were_verified(cpu_run):
    files = sorted((cpu_run["dir"] / "logs" / "rollouts").glob("train_step*.jsonl"))
    trajectories = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert trajectories and all(t["verification"] is not None for t in trajectories)
    assert {t["task_id"] for t in trajectories} <= {"csv-file-parsing-amount-sum", "csv-filter-by-value",
                                                    "base64-decode-secret-message", "security-remove-hardcoded-password",
                                                    "debugging-off-by-one-loop-error", "lru-cache-implementation"}
    leftovers = docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}=ci"]})
    assert leftovers == [], "every sandbox was removed"


def test_checkpoint_written_and_resume_continues_from_it(cpu_run):
    checkpoints = cpu_run["dir"] / "checkpoints"
    assert (checkpoints / "global_step_2" / "actor").is_dir()
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "3"
    resumed_log = cpu_run["resumed"].stdout + cpu_run["resumed"].stderr
    assert "global_step_2" in resumed_log
    assert "step:3 -" in resumed_log and "step:1 -" not in resumed_log


def test_wandb_logs_offline(cpu_run):
    runs = list((cpu_run["dir"] / "logs" / "wandb").glob("offline-run-*"))
    assert runs, "wandb wrote an offline run to sync later"
    print(f"CPU run wall time: first run {cpu_run['seconds'][0]:.0f}s (2 steps), resume {cpu_run['seconds'][1]:.0f}s")


def test_resumed_run_draws_the_tasks_an_uninterrupted_run_would(cpu_run):
    """The pure sampler, restored from the step-2 checkpoint, predicts exactly step 3's tasks."""
    import pyarrow.parquet as pq

    from terminal_rl.config import CONF_DIR
    from terminal_rl.curriculum.sampler import TaskSampler
    from terminal_rl.curriculum.schedule import CurriculumState, schedule_from_config
    import yaml

    run_dir = cpu_run["dir"]
    state = json.loads((run_dir / "checkpoints" / "global_step_2" / "curriculum.json").read_text())
    extra = pq.read_table(run_dir / "data" / "train.parquet", columns=["extra_info"]).column("extra_info").to_pylist()
    sampler = TaskSampler({e["task_id"]: e["difficulty"] for e in extra}, seed=0)
    sampler.restore(state["sampler"])
    schedule = schedule_from_config(yaml.safe_load((CONF_DIR / "curriculum" / "judge_anneal.yaml").read_text()))
    mix = schedule.difficulty_mix(CurriculumState.from_dict(state["state"]))
    rolled = sorted({json.loads(line)["task_id"] for f in (run_dir / "logs" / "rollouts").glob("train_step000003.*.jsonl")
                     for line in f.read_text().splitlines()})
    predicted = sampler.draw_batch(mix, 2)
    assert rolled and set(rolled) <= set(predicted + sampler.draw_batch(mix, 2)), (rolled, predicted)
