import pytest

from terminal_rl.config import CONF_DIR
from terminal_rl.curriculum.sampler import TaskSampler
from terminal_rl.curriculum.schedule import (
    DIFFICULTIES,
    CurriculumState,
    Gate,
    Schedule,
    Stage,
    judge_free_from,
    schedule_from_config,
)


def preset(name, total_steps=200):
    import yaml

    return schedule_from_config(yaml.safe_load((CONF_DIR / "curriculum" / f"{name}.yaml").read_text()), total_steps)


def test_judge_anneal_weight_is_zero_at_the_final_level_and_never_rises():
    schedule = preset("judge_anneal")
    assert schedule.anneals_judge
    last = len(schedule.stages) - 1
    for difficulty in DIFFICULTIES:
        weights = [schedule.judge_weight(stage, difficulty) for stage in range(len(schedule.stages))]
        assert all(a >= b for a, b in zip(weights, weights[1:])), (difficulty, weights)
        assert weights[last] == 0.0
    assert schedule.judge_weight(0, "extremely_hard") == 0.0
    assert schedule.reward_weights(0, "easy", {"tests": 1.0}) == {"tests": 0.5, "judge": 0.5}
    assert schedule.reward_weights(last, "hard", {"tests": 1.0}) == {"tests": 1.0, "judge": 0.0}
    # The difficulty mix moves from easy/medium to hard/extremely_hard.
    first, final = schedule.difficulty_mix(CurriculumState(0)), schedule.difficulty_mix(CurriculumState(last))
    assert first["easy"] + first["medium"] == 1.0 and final["hard"] + final["extremely_hard"] == 1.0


@pytest.mark.parametrize("total_steps", [180, 400, 1650])
def test_judge_anneal_fits_the_run_it_is_used_in(total_steps):
    """Stage lengths are fractions of the run: the tests-only stage starts at 3/4 of any run length."""
    schedule = preset("judge_anneal", total_steps)
    assert [s.max_steps for s in schedule.stages] == [round(total_steps / 4)] * 3 + [0]
    assert judge_free_from(schedule) == 3 * round(total_steps / 4) < total_steps


def test_a_schedule_that_never_drops_the_judge_has_no_judge_free_step():
    kept = Schedule([Stage("a", {"easy": 1}, {"easy": 0.5}, max_steps=3), Stage("b", {"hard": 1}, {"hard": 0.1})])
    assert judge_free_from(kept) is None
    with pytest.raises(ValueError, match="needs a fraction"):
        schedule_from_config(
            {
                "kind": "staged",
                "stages": [
                    {"name": "a", "difficulty_weights": {"easy": 1}},
                    {"name": "b", "difficulty_weights": {"hard": 1}},
                ],
            },
            10,
        )


def test_performance_gate_advances_on_a_synthetic_metric_stream():
    schedule = Schedule(
        [
            Stage("a", {"easy": 1}, max_steps=100, min_steps=3, advance_at=Gate("test_score", 0.5, 3)),
            Stage("b", {"hard": 1}),
        ]
    )
    state = CurriculumState()
    stream = [0.1, 0.9, 0.9, 0.2, 0.6, 0.6, 0.6]  # windows of 3: .63 after step 3 -> advance
    stages = []
    for score in stream:
        state = schedule.advance(state, score, 0.0)
        stages.append(state.stage)
    assert stages == [0, 0, 1, 1, 1, 1, 1]


def test_a_step_without_scores_counts_for_the_stage_length_not_for_the_gate():
    schedule = Schedule(
        [Stage("a", {"easy": 1}, max_steps=2, advance_at=Gate("test_score", 0.5, 1)), Stage("b", {"hard": 1})]
    )
    masked = schedule.advance(CurriculumState(), None, None)
    assert (masked.stage, masked.steps_in_stage, masked.recent) == (0, 1, ())
    assert schedule.advance(masked, None, None).stage == 1, "the stage still ends after its length"


def test_pass_rate_gate_and_max_steps():
    gated = Schedule([Stage("a", {"easy": 1}, advance_at=Gate("pass_rate", 0.75, 2)), Stage("b", {"hard": 1})])
    state = gated.advance(gated.advance(CurriculumState(), 1.0, 0.0), 1.0, 1.0)
    assert state.stage == 0, "test scores alone do not meet a pass-rate gate"
    capped = Schedule([Stage("a", {"easy": 1}, max_steps=2), Stage("b", {"hard": 1})])
    assert capped.advance(capped.advance(CurriculumState(), 0.0, 0.0), 0.0, 0.0).stage == 1


def test_linear_and_none_presets():
    linear = preset("difficulty_linear")
    mixes = [linear.difficulty_mix(CurriculumState(s)) for s in range(len(linear.stages))]
    assert mixes[0] == {"easy": 0.5, "medium": 0.5, "hard": 0.0, "extremely_hard": 0.0}
    assert mixes[-1] == {"easy": 0.0, "medium": 0.0, "hard": 0.5, "extremely_hard": 0.5}
    assert [s.max_steps for s in linear.stages] == [40, 40, 40, 40, 0], "five equal parts of a 200-step run"
    assert not linear.anneals_judge and linear.reward_weights(2, "easy", {"tests": 0.65, "judge": 0.35}) == {
        "tests": 0.65,
        "judge": 0.35,
    }
    assert preset("none").difficulty_mix(CurriculumState()) == {}


def test_state_save_and_restore():
    state = CurriculumState(2, 5, ((0.5, 0.0), (0.25, 0.0)))
    assert CurriculumState.from_dict(state.to_dict()) == state


def test_bad_schedules_are_rejected():
    with pytest.raises(ValueError, match=r"unknown difficulty in \['trivial'\]"):
        Schedule([Stage("a", {"trivial": 1.0})])
    with pytest.raises(ValueError, match="judge weights must be in"):
        Schedule([Stage("a", {"easy": 1.0}, {"easy": 1.5})])


TASKS = {"e1": "easy", "e2": "easy", "m1": "medium", "h1": "hard", "x1": "extremely_hard"}


def test_sampler_is_deterministic_and_resume_exact():
    mix = {"easy": 0.5, "medium": 0.5}
    uninterrupted = TaskSampler(TASKS, seed=7)
    expected = uninterrupted.draw_batch(mix, 20)
    first = TaskSampler(TASKS, seed=7)
    head = first.draw_batch(mix, 12)
    resumed = TaskSampler(TASKS, seed=7)
    resumed.restore(first.state())
    assert head + resumed.draw_batch(mix, 8) == expected
    assert set(expected) <= {"e1", "e2", "m1"}


def test_sampler_pool_order_keep_list_parking_and_empty_buckets():
    sampler = TaskSampler(TASKS, seed=1, keep=frozenset({"e1", "m1", "h1"}))
    sampler.parked.add("m1")
    assert sampler.pool() == ["e1", "h1"]
    # medium's bucket is empty: its weight goes to the stage's other levels
    assert set(sampler.draw_batch({"easy": 0.1, "medium": 0.9}, 30)) == {"e1"}
    # every level of the stage is empty: fall back to the whole remaining pool
    assert set(sampler.draw_batch({"extremely_hard": 1.0}, 30)) == {"e1", "h1"}
    # no weights: uniform over tasks
    assert set(sampler.draw_batch({}, 40)) == {"e1", "h1"}
    sampler.parked |= {"e1", "h1"}
    with pytest.raises(RuntimeError, match="the sampling pool is empty"):
        sampler.draw({})


def test_plot_cli_writes_a_png(tmp_path):
    import subprocess
    import sys

    from terminal_rl.config import PROJECT_ROOT

    out = tmp_path / "anneal.png"
    result = subprocess.run(
        [sys.executable, "-m", "terminal_rl.curriculum", "curriculum=judge_anneal", f"out={out}"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
