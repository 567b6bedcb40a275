"""The one reader of model JSON against replies in the shapes real models give
(tests/fixtures/model_replies.yaml), through every caller: the judge's verdict, the task generator's
three stages and the PRM step scores. Each caller's own checks come after the reader."""

import json

import pytest
import yaml

from terminal_rl.agent.policies.model_json import MalformedReply, answer_text, reply_object
from terminal_rl.datasets.prm import parse_step_scores
from terminal_rl.generation.drafts import parse_completion, parse_description, parse_environment
from terminal_rl.judge.rubric import parse_verdict
from tests.conftest import FIXTURES

CORPUS = yaml.safe_load((FIXTURES / "model_replies.yaml").read_text(encoding="utf-8"))
VERDICT = {
    "todo_planning": 1.0,
    "phase_adherence": 0.5,
    "action_output_success": 1.0,
    "tool_effectiveness": 0.5,
    "modifiers": {"efficiency": 0.05},
    "penalties": {"gaming": 0.0},
    "rationale": "Planned first, ran the tests {twice}, fixed the parser.",
}
# caller -> (the object it asks for, its parser, what the parse must give)
CALLERS = {
    "judge": (VERDICT, parse_verdict, lambda v: v.score == pytest.approx(0.35 + 0.25 + 0.125 + 0.075 + 0.05)),
    "generator_description": (
        {
            "title": "Count words",
            "instruction": "Write the word count of /app/in.txt to /app/out.txt.",
            "ground_truth": {"files": {"/app/in.txt": "a b c"}, "paths": ["/app/out.txt"], "expected_final_state": "3"},
        },
        parse_description,
        lambda d: d.title == "Count words",
    ),
    "generator_environment": (
        {"dockerfile": "FROM debian:bookworm\nRUN mkdir /app", "initial_tests": "def test_x():\n    assert True\n"},
        parse_environment,
        lambda e: e.dockerfile.startswith("FROM debian"),
    ),
    "generator_completion": (
        {"tests": "def test_a():\n    assert True\n", "weights": {"test_a": 1}, "solution": "echo 3 > /app/out.txt"},
        parse_completion,
        lambda c: c.weights == {"test_a": 1.0},
    ),
    "prm": (
        {"steps": [{"step": 1, "score": 4, "reason": "good {start}"}, {"step": 2, "score": 2, "reason": "loop"}]},
        lambda text: parse_step_scores(text, 2),
        lambda steps: [s["score"] for s in steps] == [4, 2],
    ),
}


def reply(template: str, value: dict) -> str:
    pretty = json.dumps(value, indent=2)
    trailing = pretty.replace("\n}", ",\n}").replace("\n  ]", ",\n  ]")
    return (
        template.replace("@OBJECT_TRAILING_COMMAS@", trailing)
        .replace("@OBJECT_TRUNCATED@", pretty[: len(pretty) * 2 // 3])
        .replace("@OBJECT@", pretty)
    )


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_every_caller_reads_every_reply_shape(case, caller):
    value, parse, check = CALLERS[caller]
    text = reply(case["reply"], value)
    if case["expect"] == "ok":
        assert check(parse(text)), text
    else:
        with pytest.raises(MalformedReply) as caught:
            parse(text)
        assert str(caught.value).startswith(case["expect"]), (str(caught.value), text)


def test_reasoning_is_dropped_but_a_cut_off_thought_is_no_answer():
    assert answer_text('<think>{"a": 1}</think>\n{"b": 2}') == '{"b": 2}'
    assert reply_object('<THINK>x</THINK>{"b": 2}') == {"b": 2}
    with pytest.raises(MalformedReply, match="only reasoning"):
        reply_object('<think>{"a": 1}')


def test_an_object_inside_an_object_is_part_of_it():
    assert reply_object('note {"outer": {"inner": {"x": 1}}} end') == {"outer": {"inner": {"x": 1}}}
