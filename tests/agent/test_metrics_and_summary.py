import pytest

from terminal_rl.agent.evaluation import pass_at_k, summarize
from terminal_rl.agent.metrics import behaviour_metrics, diversity_after_errors, has_loop
from terminal_rl.agent.trajectory import Trajectory, Turn


def turn(index, commands=(), exit_codes=(), parse_error=None, tool="bash"):
    actions = [{"tool": tool, "args": {"cmd": c}} for c in commands]
    results = [{"tool": tool, "ok": code == 0, "exit_code": code} for code in exit_codes]
    return Turn(index, "", actions, results, "obs", parse_error, 0.0, 0.1)


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        (["ls", "ls", "ls"], True),
        (["ls", "cat a", "ls", "cat a", "ls", "cat a"], True),
        (["ls", "ls", "pwd", "ls"], False),
        (["a", "b", "c", "a", "b", "c", "a", "b"], False),
        ([], False),
    ],
)
def test_loop_detection(sequence, expected):
    assert has_loop(sequence, repeats=3) is expected


def test_diversity_after_errors():
    assert diversity_after_errors([("make", 2), ("make", 2), ("make", 2), ("vim x", 0)]) == pytest.approx(2 / 3)
    assert diversity_after_errors([("ls", 0), ("pwd", 0)]) is None


def test_behaviour_metrics():
    trajectory = Trajectory(
        "t",
        "h",
        "xml_yaml.v1",
        "scripted",
        termination="max_turns",
        turns=[
            turn(0, ["make"], [2]),
            turn(1, parse_error="bad"),
            turn(2, ["make"], [2]),
            turn(3, ["make"], [2]),
        ],
    )
    metrics = behaviour_metrics(trajectory)
    assert metrics == {
        "turns": 4,
        "loop": 1.0,
        "turn_exhaustion": 1.0,
        "parse_error_rate": 0.25,
        "commands": 3,
        "diversity_after_errors": 0.5,
        "tool/bash": 3.0,
    }


def test_pass_at_k_and_summary():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 2) == pytest.approx(0.5)

    def done(task, score, termination="finished"):
        return Trajectory(
            task,
            "h",
            "p",
            "x",
            termination=termination,
            duration_sec=2.0,
            verification=None if score is None else {"score": score},
            metadata={"cost_usd": 0.01, "behaviour": {"loop": 0.0}},
        )

    summary = summarize([done("a", 1.0), done("a", 0.5), done("b", 0.0), done("b", None, "sandbox_error")])
    assert summary["pass_rate"] == pytest.approx(1 / 3)
    assert summary["mean_score"] == pytest.approx(0.5)
    assert summary["pass_at_k"] == {1: pytest.approx(0.25), 2: pytest.approx(0.5)}
    assert summary["terminations"] == {"finished": 3, "sandbox_error": 1}
    assert summary["cost_usd"] == pytest.approx(0.04)


def test_a_rerun_tries_infrastructure_failures_again_and_counts_each_attempt_once(tmp_path):
    """An attempt that failed on infrastructure (engine, policy endpoint) is pending on a rerun; its
    retry replaces it in what the results file says, so no attempt counts twice."""
    from terminal_rl.agent.evaluation import EvaluationPlan, pending_pairs, read_results
    from terminal_rl.tasks.procedural import procedural_tasks
    from tests.support import SMALL_LIMITS

    [task] = procedural_tasks("write_value", 1, 0, ["easy"], SMALL_LIMITS)
    results = tmp_path / "results.jsonl"

    def record(attempt, termination, score):
        t = Trajectory(task.id, task.content_hash, "p", "x", termination=termination, metadata={"attempt": attempt})
        t.verification = None if score is None else {"score": score}
        with results.open("a") as out:
            out.write(t.to_json() + "\n")

    record(0, "sandbox_error", None)
    record(1, "finished", 1.0)
    record(2, "timeout", 0.0)  # the agent's doing: scored, not retried
    plan = EvaluationPlan([task], 3, 1, results)
    assert [attempt for _, attempt in pending_pairs(plan)] == [0]
    record(0, "finished", 0.5)
    assert pending_pairs(plan) == []
    assert sorted((t.metadata["attempt"], t.score) for t in read_results(results)) == [(0, 0.5), (1, 1.0), (2, 0.0)]
