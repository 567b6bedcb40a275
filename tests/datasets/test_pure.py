"""The datasets' pure logic in milliseconds: the forged-fixture rule, SFT and DPO selection, PRM
step scores."""

from __future__ import annotations

import pytest

from terminal_rl.agent.policies.model_json import MalformedReply
from terminal_rl.agent.trajectory import Trajectory, Turn
from terminal_rl.datasets.forged import flag_forged, forged_fixture
from terminal_rl.datasets.prm import divergence_step, parse_step_scores
from terminal_rl.datasets.selection import select_dpo, select_prm, select_sft
from terminal_rl.datasets.sources import Episode

TURN = Turn(0, "<finish>\nmessage: x\n</finish>", [], [], None, None, 0.0, 0.0)


def episode(
    task="t",
    score=1.0,
    policy="scripted",
    changes=None,
    reads=(),
    start_files_changed=(),
    step=-1,
    group="g",
    reward=None,
    line=1,
    content_hash="h",
    run="run",
) -> Episode:
    verification = {
        "score": score,
        "changes": changes or {},
        "reads": list(reads),
        "start_files_changed": list(start_files_changed),
    }
    trajectory = Trajectory(
        task, content_hash, "xml_yaml", policy, turns=[TURN], termination="finished", verification=verification
    )
    return Episode(
        trajectory,
        run,
        "evaluation",
        step,
        group,
        score if reward is None else reward,
        {},
        "train",
        line,
        "eval/results.jsonl",
    )


def test_rewriting_an_input_the_tests_read_is_forged_without_a_solution():
    forged = episode(
        changes={"/app/data.csv": "modified", "/app/parser.py": "added"}, reads=["/app/data.csv", "/app/parser.py"]
    )
    flag = forged_fixture(forged, None)
    assert flag is not None and flag.files == ["/app/data.csv"] and "rewrote or deleted inputs" in flag.reason
    honest = episode(changes={"/app/parser.py": "added"}, reads=["/app/data.csv", "/app/parser.py"])
    assert forged_fixture(honest, None) is None, "adding the file the task asks for is the job"
    deleted = episode(changes={"/app/expected.txt": "deleted"}, reads=["/app/expected.txt"])
    assert forged_fixture(deleted, None).files == ["/app/expected.txt"]
    start_file = episode(start_files_changed=["/app/notes.txt"], reads=["/app/notes.txt"])
    assert forged_fixture(start_file, None).files == ["/app/notes.txt"]
    unread = episode(changes={"/app/data.csv": "modified"}, reads=["/app/parser.py"])
    assert forged_fixture(unread, None) is None, "a change the tests never read cannot forge them"


def test_with_a_solution_only_changes_beyond_it_count():
    solution = {"/app/config.ini", "/app/out.txt"}
    fix = episode(
        changes={"/app/config.ini": "modified", "/app/out.txt": "added"}, reads=["/app/config.ini", "/app/out.txt"]
    )
    assert forged_fixture(fix, solution) is None, "the reference solution edits config.ini too: a fix, not a forgery"
    extra = episode(
        changes={"/app/out.txt": "added", "/app/cache.json": "added"}, reads=["/app/out.txt", "/app/cache.json"]
    )
    flag = forged_fixture(extra, solution)
    assert flag.files == ["/app/cache.json"] and "reference solution does not change" in flag.reason
    oracle = episode(policy="oracle", changes={"/app/config.ini": "modified", "/app/out.txt": "added"})
    flags = flag_forged(
        [
            oracle,
            fix,
            extra,
            episode(
                task="t",
                content_hash="other",
                changes={"/app/out.txt": "added", "/app/cache.json": "added"},
                reads=["/app/cache.json"],
                line=9,
            ),
        ]
    )
    assert [f.episode.trajectory.content_hash for f in flags] == ["h"], (
        "a solution's changes apply to its own task version only; the other version has none, and adding is allowed"
    )


def test_sft_picks_the_latest_step_then_the_widest_group_then_the_reward():
    old = episode(step=1, group="a", reward=1.0, line=1)
    new_narrow = [
        episode(step=3, group="b", reward=1.0, line=2),
        episode(step=3, group="b", score=0.9, reward=0.9, line=3),
    ]
    new_wide = [
        episode(step=3, group="c", reward=0.95, line=4),
        episode(step=3, group="c", score=0.0, reward=0.0, line=5),
    ]
    chosen = select_sft([old, *new_narrow, *new_wide], min_score=1.0)
    assert [e.line for e in chosen] == [4]
    assert [e.line for e in select_sft([old, *new_narrow, *new_wide], 1.0, excluded={"run/eval/results.jsonl#4"})] == [
        2
    ]
    assert select_sft([episode(score=0.99)], min_score=1.0) == []


def test_dpo_pairs_the_best_chosen_with_the_worst_rejected_within_a_task_and_step():
    group = [
        episode(score=1.0, line=1),
        episode(score=0.92, line=2),
        episode(score=0.5, line=3),
        episode(score=0.0, line=4),
        episode(score=0.2, line=5),
        episode(score=0.0, step=2, line=6),
    ]
    pairs = select_dpo(group, chosen_min=0.9, rejected_max=0.3, max_pairs=4)
    assert [(c.line, r.line) for c, r in pairs] == [(1, 4), (2, 5)]
    assert select_dpo(group, 0.9, 0.3, max_pairs=1, excluded={"run/eval/results.jsonl#1"})[0][0].line == 2
    other_run = [episode(score=1.0, run="a"), episode(score=0.0, run="b")]
    assert select_dpo(other_run, 0.9, 0.3, 4) == [], "step N of two runs are different weights: never a pair"
    with pytest.raises(ValueError, match="rejected_max 0.95 must not exceed chosen_min 0.9"):
        select_dpo(group, 0.9, 0.95, 4)


def test_step_scores_are_parsed_strictly_and_failing_episodes_get_a_divergence_step():
    text = '{"steps": [{"score": 5, "reason": "looked first"}, {"score": 2, "reason": "wrong file"}]}'
    assert parse_step_scores(text, 2) == [
        {"step": 1, "score": 5, "reason": "looked first"},
        {"step": 2, "score": 2, "reason": "wrong file"},
    ]
    with pytest.raises(MalformedReply, match="exactly 3 entries"):
        parse_step_scores(text, 3)
    with pytest.raises(MalformedReply, match="step 1: 'score' must be an integer from 1 to 5"):
        parse_step_scores('{"steps": [{"score": 6}]}', 1)
    assert divergence_step([5, 4, 2, 1], passed=False, max_score=2) == 3
    assert divergence_step([5, 1], passed=True, max_score=2) is None
    assert divergence_step([5, 4], passed=False, max_score=2) is None


def test_the_prm_cap_spreads_over_tasks_failing_episodes_first():
    a_pass, a_fail, a_fail2 = episode("a", 1.0, line=1), episode("a", 0.0, line=2), episode("a", 0.2, line=3)
    b_pass, c_fail = episode("b", 1.0, line=4), episode("c", 0.0, line=5)
    no_turns = episode("d", 0.0, line=6)
    no_turns.trajectory.turns.clear()
    episodes = [a_pass, a_fail, a_fail2, b_pass, c_fail, no_turns]
    assert select_prm(episodes, 3) == [a_fail, b_pass, c_fail], "one of each task first, its failing one first"
    assert select_prm(episodes, 5) == [a_fail, b_pass, c_fail, a_fail2, a_pass]
    assert select_prm(episodes, 99) == select_prm(episodes, 5), "episodes without turns are never scored"
    assert select_prm(episodes, 0) == []
