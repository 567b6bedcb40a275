"""MT-GRPO's per-turn rewards and advantages against numbers worked out by hand."""

import math

import pytest

from terminal_rl.rewards.turn_credit import (
    TurnCredit,
    TurnFacts,
    token_turns,
    turn_advantages,
    turn_facts,
    turn_rewards,
)

# The defaults (conf/train.yaml credit.turn).
CREDIT = TurnCredit(alpha=0.5, gamma=0.95, w_outcome=0.7, w_exec=0.15, w_format=0.15, w_efficiency=0.05, epsilon=1e-6)
OK, FAILED, UNPARSED = TurnFacts(True, True), TurnFacts(False, True), TurnFacts(False, False)


def test_a_passing_trajectory_discounts_its_outcome_back_from_the_last_turn():
    # R = 1, T = 3, max_turns 10: efficiency 0.05 * 7/9 on every turn; outcome 0.7 * 0.95^(2-t).
    rewards = turn_rewards(1.0, [OK, FAILED, OK], 10, CREDIT)
    efficiency = 0.05 * 7 / 9
    assert rewards == pytest.approx(
        [0.7 * 0.9025 + 0.15 + 0.15 + efficiency, 0.7 * 0.95 + 0.15 + efficiency, 0.7 + 0.3 + efficiency]
    )
    assert rewards == pytest.approx([0.9706389, 0.8538889, 1.0388889])


def test_a_failing_trajectory_earns_only_exec_and_format_credit():
    assert turn_rewards(0.0, [UNPARSED, OK], 10, CREDIT) == pytest.approx([0.0, 0.3])
    assert turn_rewards(0.5, [OK], 1, CREDIT) == pytest.approx([0.35 + 0.3]), "max_turns 1: no efficiency term"


def test_turn_facts_come_from_the_trajectory_record():
    bash, finish = {"tool": "bash"}, {"tool": "finish"}
    turns = [
        {"actions": [bash, bash], "results": [{"tool": "bash", "ok": True}] * 2, "parse_error": None},
        {
            "actions": [bash, bash],
            "results": [{"tool": "bash", "ok": True}, {"tool": "bash", "ok": False}],
            "parse_error": None,
        },
        {"actions": [], "results": [], "parse_error": "no action"},
        {"actions": [finish], "results": [{"tool": "finish", "ok": True}], "parse_error": None},
        {"actions": [], "results": [], "parse_error": None},
    ]  # cut off by the clock before parsing
    assert turn_facts(turns) == [OK, FAILED, UNPARSED, FAILED, UNPARSED]


def test_each_turn_position_is_normalised_over_the_samples_that_reached_it():
    # Group g: three samples of 3, 2 and 1 turns; group h: one sample.
    rewards = [[1.0, 2.0, 3.0], [3.0, 4.0], [5.0], [9.0, 9.0]]
    advantages = turn_advantages(rewards, ["g", "g", "g", "h"], epsilon=0.0)
    # position 0 of g: [1, 3, 5], mean 3, std 2; position 1: [2, 4], mean 3, std sqrt(2);
    # position 2 (one sample) and every position of h (one sample): nothing to compare, 0.
    assert advantages[0] == pytest.approx([-1.0, -1 / math.sqrt(2), 0.0])
    assert advantages[1] == pytest.approx([0.0, 1 / math.sqrt(2)])
    assert advantages[2] == pytest.approx([1.0])
    assert advantages[3] == [0.0, 0.0]
    assert turn_advantages(rewards[:2], ["g", "g"], 0.0, by_std=False) == [[-1.0, -1.0, 0.0], [1.0, 1.0]]


def test_identical_turns_get_no_turn_advantage():
    assert turn_advantages([[0.3, 0.3], [0.3, 0.3]], ["g", "g"], 1e-6) == [[0.0, 0.0], [0.0, 0.0]]


def test_token_positions_map_to_their_turn_and_the_token_cap_cuts_the_last_turns():
    assert token_turns([(0, 3), (5, 8)], 10) == [0, 0, 0, -1, -1, 1, 1, 1, -1, -1]
    assert token_turns([(0, 3), (5, 8), (9, 12)], 7) == [0, 0, 0, -1, -1, 1, 1], "cut by the cap"
