import pytest

from terminal_rl.agent.trajectory import Trajectory, Turn
from terminal_rl.rewards.components import (
    ComponentScore,
    all_components,
    score_efficiency,
    score_exec,
    score_format,
    score_judge,
    score_task_reward,
    score_tests,
)
from terminal_rl.rewards.mix import RewardMix, score_group


def trajectory(score=0.5, exit_codes=(0, 1, 0), parse_errors=(None, "bad", None, None)):
    turns = [Turn(i, "", [], [], "o", p, 0.0, 0.0) for i, p in enumerate(parse_errors)]
    turns[0].actions = [{"tool": "bash", "args": {"cmd": f"c{i}"}} for i in range(len(exit_codes))]
    turns[0].results = [{"exit_code": c} for c in exit_codes]
    return Trajectory("t", "h", "p", "x", turns=turns, verification={"score": score, "reason": ""})


def test_components():
    t = trajectory()
    assert score_tests(t).score == 0.5
    assert score_tests(Trajectory("t", "h", "p", "x")).details == {"reason": "not verified"}
    assert score_format(t).score == 0.75
    assert score_exec(t).score == pytest.approx(2 / 3)
    assert score_efficiency(t, max_turns=10, tests=0.5).score == pytest.approx(0.7)
    assert score_efficiency(t, max_turns=10, tests=0.0).score == 0.0
    assert score_judge({"score": 0.8, "backend": "m"}) == ComponentScore("judge", 0.8, {"backend": "m"})
    assert score_judge({"score": None, "missing_reason": "budget exhausted"}).missing
    assert score_judge(None).details == {"reason": "not judged"}
    assert set(all_components(t, None, 10)) == {"tests", "task_reward", "judge", "format", "exec", "efficiency"}
    assert score_task_reward(t).score == 0.0, "weighted tests: 1 only when all passed"
    harbor = Trajectory("t", "h", "p", "x", verification={"score": 0.5, "task_reward": 1.0})
    assert score_task_reward(harbor) == ComponentScore("task_reward", 1.0, {"source": "test.sh"})


def sample(tests, judge):
    return {"tests": ComponentScore("tests", tests), "judge": ComponentScore("judge", judge)}


MIX = RewardMix({"tests": 0.65, "judge": 0.35})


def test_mix_blends_components():
    group = score_group([sample(1.0, 0.5), sample(0.0, 1.0)], MIX)
    assert group.rewards == pytest.approx([0.825, 0.35])
    assert (group.fallback, group.dropped, group.weights) == (False, False, {"tests": 0.65, "judge": 0.35})


def test_missing_judge_for_one_sample_falls_back_for_the_whole_group():
    group = score_group([sample(1.0, 0.9), sample(0.5, None), sample(0.0, 0.2)], MIX)
    assert group.rewards == pytest.approx([1.0, 0.5, 0.0]), "every sample scored tests-only, none blended"
    assert group.weights == {"tests": 1.0, "judge": 0.0}
    assert group.fallback and group.missing == ["judge"]


def test_missing_judge_can_drop_the_group():
    group = score_group([sample(1.0, 0.9), sample(0.5, None)], RewardMix(MIX.weights, "drop"))
    assert group.dropped and group.rewards is None and group.missing == ["judge"]


def test_missing_unweighted_component_is_ignored():
    group = score_group([sample(1.0, None)], RewardMix({"tests": 1.0, "judge": 0.0}))
    assert group.rewards == [1.0] and not group.fallback


def test_weights_are_validated():
    with pytest.raises(ValueError, match="must be >= 0 and sum to 1"):
        RewardMix({"tests": 0.7, "judge": 0.35})
    with pytest.raises(ValueError, match="'skip' is not a valid MissingPolicy"):
        RewardMix({"tests": 1.0}, "skip")


@pytest.mark.parametrize(
    ("preset", "weights"),
    [
        ("tests_only", {"tests": 1.0}),
        ("tests65_judge35", {"tests": 0.65, "judge": 0.35}),
        ("format5_exec10_tests85", {"format": 0.05, "exec": 0.10, "tests": 0.85}),
    ],
)
def test_presets_compose(preset, weights):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from terminal_rl.config import CONF_DIR

    with initialize_config_dir(str(CONF_DIR / "reward_mix"), version_base="1.3"):
        node = hydra_compose(preset)
    mix = RewardMix(dict(node.weights), node.missing)
    assert mix.weights == weights
