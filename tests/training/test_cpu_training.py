"""The main job end to end on CPU: real verl GRPO steps with our agent loop in real Docker sandboxes on
real tasks, with the judge_anneal curriculum and online-variance filtering (the judge is a local
OpenAI-compatible test server), wandb offline logging, checkpoints, and a resume. One run (the
``cpu_run`` fixture in tests/conftest.py) is shared by every test here and by the notebook test: four
steps on the smoke tasks plus a task whose image cannot build and a task whose model calls raise,
SIGKILLed right after step 2's checkpoint and resumed from it."""

import json
import math

import pytest

from terminal_rl.analysis import load_metrics
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.training.metrics import is_ours_or_verls
from tests.conftest import IMAGE_FAULT, SESSION_FAULT, SMOKE_TASKS

pytestmark = [pytest.mark.verl, pytest.mark.docker]


def metrics(run_dir):
    """Step -> the metrics logged at that step, over every launch (a resume writes a new file)."""
    return {step: row.dropna().to_dict() for step, row in load_metrics(run_dir).iterrows()}


def launch_logs(run_dir) -> list[str]:
    """What verl and the libraries printed, per launch (logs/train.log; the console shows none of it)."""
    from terminal_rl.console import LAUNCH_MARKER

    return (run_dir / "logs" / "train.log").read_text().split(LAUNCH_MARKER)[1:]


def rollouts(run_dir, split="train"):
    """Step -> every trajectory the rollout workers logged for it (filtered groups included)."""
    steps: dict[int, list[dict]] = {}
    for path in (run_dir / "logs" / "rollouts").glob(f"{split}_step*.jsonl"):
        step = int(path.name.split("_step")[1].split(".")[0])
        steps.setdefault(step, []).extend(json.loads(line) for line in path.read_text().splitlines())
    return steps


def test_grpo_steps_log_reward_components_and_validation(cpu_run):
    steps = metrics(cpu_run["dir"])
    assert set(steps) == {1, 3, 4}, "step 2's metrics died with the first launch; the resume logged 3 and 4"
    for key in (
        "reward/tests/mean",
        "reward/judge/mean",
        "reward/format/mean",
        "reward/exec/mean",
        "reward/weight/tests",
        "rollout/masked_fraction",
        "rollout/ended/parse_errors",
        "behaviour/parse_error_rate",
        "actor/pg_loss",
        "critic/score/mean",
        "timing_s/step",
        "judge/calls",
    ):
        assert key in steps[1], key
    logged = {name for step in steps.values() for name in step}
    assert [name for name in logged if not is_ours_or_verls(name)] == [], "every metric is named in training/metrics.py"
    assert all(steps[step]["training/optimizer_steps"] == 1 for step in steps), (
        "one mini-batch a step (ppo_mini_batch_size = prompts_per_step), so one optimizer step"
    )
    log = launch_logs(cpu_run["dir"])[-1]
    assert "val-core/terminal_bench_rl/acc/mean@1" in log, "in-training validation ran on the val split"
    assert "val-aux/terminal_bench_rl/pass/mean@1" in log


def test_judge_weights_follow_the_curriculum_and_reach_zero(cpu_run):
    steps = metrics(cpu_run["dir"])
    first, last = steps[1], steps[4]
    assert first["curriculum/drawn_stage"] == 0.0 and 0.0 < first["reward/weight/judge"] <= 0.5
    assert first["reward/weight/tests"] + first["reward/weight/judge"] == 1.0
    assert last["curriculum/drawn_stage"] == 3.0 and last["reward/weight/judge"] == 0.0, (
        "the run's last quarter is tests-only: the judge really reaches 0"
    )
    for key in ("rollout/variance_reward", "rollout/variance_tests", "rollout/zero_variance_tests", "rollout/filtered"):
        assert key in first, key
    assert cpu_run["judge_calls"] > 0
    assert (cpu_run["dir"] / "logs" / "curriculum.png").is_file()


def test_the_curriculum_gate_reads_every_group_before_filtering(cpu_run):
    logged, steps = rollouts(cpu_run["dir"]), metrics(cpu_run["dir"])
    for step in (1, 3, 4):
        drawn = [
            t
            for t in logged[step]
            if not t["metadata"]["masked"] and t["metadata"]["stage"] == steps[step]["curriculum/drawn_stage"]
        ]
        if not drawn:  # every group masked: the gate saw nothing (the step still counts for the stage)
            assert "curriculum/gate_test_score" not in steps[step]
            continue
        expected = sum(t["verification"]["score"] for t in drawn) / len(drawn)
        assert steps[step]["curriculum/gate_test_score"] == pytest.approx(expected), step


def test_failures_mask_exactly_their_groups_and_never_stop_a_step(cpu_run):
    run_dir, steps, logged = cpu_run["dir"], metrics(cpu_run["dir"]), rollouts(cpu_run["dir"])
    report = json.loads((run_dir / "image_builds.json").read_text())
    [broken] = [o for o in report["outcomes"] if not o["ok"]]
    assert broken["task_id"] == IMAGE_FAULT and "exit" in broken["reason"] and "7" in broken["reason"]
    assert all(t["task_id"] != IMAGE_FAULT for step in logged.values() for t in step), "parked before step 1"
    assert steps[1]["curriculum/unavailable_tasks"] == 1.0
    faulty = [t for step in logged.values() for t in step if t["task_id"] == SESSION_FAULT]
    assert faulty and all(t["termination"] == "policy_error" and t["metadata"]["masked"] for t in faulty)
    assert "injected fault: the model server crashed" in faulty[0]["termination_detail"]
    others = [t for step in logged.values() for t in step if t["task_id"] != SESSION_FAULT]
    assert not any(t["metadata"]["masked"] for t in others), "no other group was masked"
    exact = 0
    for step in (1, 3, 4):
        kept = [t for t in logged[step] if not t["metadata"]["filtered"]]
        if len({t["metadata"]["uid"] for t in kept}) == 2:  # no surplus group: the trained batch is all of them
            exact += 1
            expected = sum(bool(t["metadata"]["masked"]) for t in kept) / len(kept)
            assert steps[step]["rollout/masked_fraction"] == pytest.approx(expected), step
    assert exact >= 2 and steps[1]["rollout/masked_fraction"] == 0.5
    # A step whose every group is masked (only the raising task was drawn) trains nothing and goes on.
    [all_masked] = [s for s in (1, 3, 4) if steps[s]["rollout/masked_fraction"] == 1.0]
    assert steps[all_masked]["actor/pg_loss"] == 0.0 and steps[all_masked]["actor/grad_norm"] == 0.0
    assert not [k for k, v in steps[all_masked].items() if isinstance(v, float) and math.isnan(v)], (
        "no NaN is logged for a step with no loss token (actor/entropy)"
    )


def test_rollouts_ran_in_real_sandboxes_and_were_verified(cpu_run):
    trajectories = [t for step in rollouts(cpu_run["dir"]).values() for t in step if t["task_id"] != SESSION_FAULT]
    assert trajectories and all(t["verification"] is not None for t in trajectories)
    assert {t["task_id"] for t in trajectories} <= set(SMOKE_TASKS)
    leftovers = docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}=ci"]})
    assert leftovers == [], "every sandbox was removed, those of the killed launch too"


def test_a_kill_between_save_and_metrics_resumes_with_the_curriculum(cpu_run):
    checkpoints = cpu_run["dir"] / "checkpoints"
    state = json.loads((checkpoints / "global_step_2" / "curriculum.json").read_text())
    assert state["state"]["stage"] == 2, "the checkpoint holds the curriculum after step 2, saved with it"
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "4"
    kept = sorted(p.name for p in checkpoints.glob("global_step_*"))
    assert kept == ["global_step_2", "global_step_3", "global_step_4"], (
        "trainer.max_actor_ckpt_to_keep=3 holds across the resume (verl alone would keep step 1 too)"
    )
    first_log, resumed_log = launch_logs(cpu_run["dir"])
    assert (
        "step:1 -" in first_log
        and "global_step_2" in resumed_log
        and "step:3 -" in resumed_log
        and "step:1 -" not in resumed_log
    )
    assert metrics(cpu_run["dir"])[3]["curriculum/drawn_stage"] == 2.0, "step 3 drew where step 2 left off"


def test_wandb_logs_offline(cpu_run):
    runs = list((cpu_run["dir"] / "logs" / "wandb").glob("offline-run-*"))
    assert runs, "wandb wrote an offline run to sync later"
    print(
        f"CPU run wall time: first launch {cpu_run['seconds'][0]:.0f}s (2 steps), resume {cpu_run['seconds'][1]:.0f}s"
    )


def test_resumed_run_draws_the_tasks_an_uninterrupted_run_would(cpu_run):
    """The pure sampler, restored from the step-2 checkpoint, predicts exactly step 3's tasks."""
    import pyarrow.parquet as pq
    import yaml

    from terminal_rl.config import CONF_DIR
    from terminal_rl.curriculum.sampler import TaskSampler
    from terminal_rl.curriculum.schedule import CurriculumState, schedule_from_config

    run_dir = cpu_run["dir"]
    state = json.loads((run_dir / "checkpoints" / "global_step_2" / "curriculum.json").read_text())
    extra = pq.read_table(run_dir / "data" / "train.parquet", columns=["extra_info"]).column("extra_info").to_pylist()
    sampler = TaskSampler({e["task_id"]: e["difficulty"] for e in extra}, seed=0, unavailable=frozenset({IMAGE_FAULT}))
    sampler.restore(state["sampler"])
    schedule = schedule_from_config(yaml.safe_load((CONF_DIR / "curriculum" / "judge_anneal.yaml").read_text()), 4)
    mix = schedule.difficulty_mix(CurriculumState.from_dict(state["state"]))
    rolled = sorted({t["task_id"] for t in rollouts(run_dir)[3]})
    predicted = sampler.draw_batch(mix, 2)
    assert rolled and set(rolled) <= set(predicted + sampler.draw_batch(mix, 2)), (rolled, predicted)


def test_the_console_shows_the_run_and_a_line_per_step_and_the_log_has_the_rest(cpu_run):
    first, resumed = cpu_run["first"].stdout, cpu_run["resumed"].stdout
    for launch, steps in ((first, ["1/4"]), (resumed, ["3/4", "4/4"])):
        lines = launch.splitlines()
        assert lines[0] == "preflight: ok (tiny on cpu)", launch[:2000]
        notes = [line for line in lines[1:] if line.startswith("preflight: ")]
        assert any(note.startswith("preflight: trained tokens") for note in notes) and any(
            note.startswith("preflight: checkpoints: ") for note in notes
        ), launch[:2000]
        lines = [lines[0], *lines[1 + len(notes) :]]
        assert lines[1].startswith("terminal_rl train  run ci  ->  "), launch[:2000]
        assert any("tasks       fault_tasks.csv: train" in line for line in lines)
        assert any(line.startswith("  curriculum  staged (") for line in lines)
        assert [line.split()[1] for line in lines if line.startswith("step ")] == steps
        assert len(lines) <= 12 + 3 * len(steps), "a bounded number of lines per step:\n" + launch
    assert "validation @ step 4:" in resumed and "done: checkpoints" in resumed and "plots" in resumed
    noise = ("actor_rollout_ref", "engine is not available", "Training Progress", "target_num_threads")
    for output in (first, resumed, cpu_run["first"].stderr, cpu_run["resumed"].stderr):
        assert not [n for n in noise if n in output], output[-3000:]
    assert len(launch_logs(cpu_run["dir"])) == 2
    log = (cpu_run["dir"] / "logs" / "train.log").read_text()
    assert all(n in log for n in noise[:3]), "the libraries' output is kept in the run's log"


def test_the_run_trains_lora_with_turn_level_advantages_and_truncation_masking(cpu_run):
    """experiment=cpu_smoke trains a LoRA adapter (verl's own, rank 8) with MT-GRPO advantages, and
    trajectories cut off by the turn limit or the context train no token, counted per termination."""
    run_dir, steps, logged = cpu_run["dir"], metrics(cpu_run["dir"]), rollouts(cpu_run["dir"])
    log = "".join(launch_logs(run_dir))
    assert "PeftModelForCausalLM" in log and "'adv_estimator': 'mt_grpo'" in log
    assert (run_dir / "checkpoints" / "global_step_4" / "actor" / "lora_train_meta.json").is_file()
    for step in (1, 3, 4):
        if steps[step]["rollout/masked_fraction"] < 1.0:  # a step with every group masked trains no turn
            assert {"advantage/turn_0/mean", "advantage/turn_0/std", "advantage/turn_spread"} <= set(steps[step]), step
        kept = [t for t in logged[step] if not t["metadata"]["filtered"]]
        if len({t["metadata"]["uid"] for t in kept}) != 2:
            continue  # a surplus group was filtered: the trained batch is not all of the logged ones
        for reason in ("max_turns", "context_exhausted"):
            ended = [t for t in kept if t["termination"] == reason]
            assert all(t["metadata"]["loss_masked"] == "truncated" for t in ended)
            expected = sum(not t["metadata"]["masked"] for t in ended) / len(kept)
            assert steps[step][f"rollout/loss_masked_{reason}"] == pytest.approx(expected), (step, reason)
    assert all(
        t["metadata"]["loss_masked"] is None
        for s in logged.values()
        for t in s
        if t["termination"] not in ("max_turns", "context_exhausted")
    )
