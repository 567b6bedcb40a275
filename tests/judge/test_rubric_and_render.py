import json

import pytest

from terminal_rl.agent.trajectory import Trajectory, Turn
from terminal_rl.judge.render import render_trajectory, truncate
from terminal_rl.judge.rubric import VerdictError, parse_verdict

GOOD = {
    "action_output_success": 1.0,
    "todo_planning": 0.5,
    "phase_adherence": 1.0,
    "tool_effectiveness": 0.0,
    "modifiers": {"efficiency": 0.05},
    "penalties": {"skipped_phases": 0.1},
    "rationale": "fine",
}


def test_verdict_score_combines_parts_modifiers_penalties():
    verdict = parse_verdict(json.dumps(GOOD))
    assert verdict.score == pytest.approx(0.35 + 0.125 + 0.25 + 0.0 + 0.05 - 0.1)
    assert parse_verdict("```json\n" + json.dumps(GOOD) + "\n```").score == verdict.score
    gamed = parse_verdict(json.dumps({**GOOD, "penalties": {"gaming": 1.0}}))
    assert gamed.score == 0.0


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("I think 0.8", "the reply holds no JSON object"),
        ("[1, 2]", "the reply holds no JSON object"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "todo_planning"}), 'missing "todo_planning"'),
        (json.dumps({**GOOD, "phase_adherence": 1.5}), '"phase_adherence" = 1.5 is outside [0.0, 1.0]'),
        (json.dumps({**GOOD, "modifiers": {"efficiency": 0.5}}), '"efficiency" = 0.5 is outside [-0.1, 0.1]'),
        (json.dumps({**GOOD, "tool_effectiveness": "high"}), "\"tool_effectiveness\" must be a number, got 'high'"),
        (json.dumps({**GOOD, "rationale": ""}), '"rationale" must be a non-empty string'),
    ],
)
def test_verdict_errors(text, error):
    with pytest.raises(VerdictError) as caught:
        parse_verdict(text)
    assert str(caught.value) == error


def test_render_truncates_with_markers_and_hides_the_test_score():
    assert truncate("abcdefghij", 4) == "ab\n[... 6 characters truncated ...]\nij"
    trajectory = Trajectory(
        "t",
        "h",
        "xml_yaml.v1",
        "x",
        termination="finished",
        termination_detail="done",
        verification={"score": 0.123456},
        turns=[
            Turn(0, "plan " * 1000, [], [], "out " * 1000, None, 0.0, 0.0),
            Turn(1, "<bad", [], [], None, "No action found.", 0.0, 0.0),
        ],
    )
    text = render_trajectory(trajectory, max_model_chars=100, max_observation_chars=50)
    assert text.startswith("2 turns; the episode ended: finished")
    assert "[... 4900 characters truncated ...]" in text and "[... 3950 characters truncated ...]" in text
    assert "[format error shown to the agent]\nNo action found." in text
    assert "0.123456" not in text
