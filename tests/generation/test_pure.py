"""The generator's pure parts: strict draft parsing, near-duplicates, difficulty bands, the funnel."""

import json

import pytest

from terminal_rl.agent.policies.model_json import MalformedReply
from terminal_rl.generation.candidates import Candidate, draw_specs
from terminal_rl.generation.dedup import NearDuplicates, jaccard, shingles
from terminal_rl.generation.difficulty import difficulty_for
from terminal_rl.generation.drafts import parse_completion, parse_description, parse_environment
from terminal_rl.generation.report import funnel

DESCRIPTION = {
    "title": "t",
    "instruction": "do it",
    "ground_truth": {"files": {"/app/a": "x"}, "paths": ["/app/a"], "expected_final_state": "done"},
}


def test_drafts_parse_bare_or_fenced_json_and_name_what_is_wrong():
    assert parse_description(json.dumps(DESCRIPTION)).instruction == "do it"
    assert (
        parse_environment(
            'Here:\n```json\n{"dockerfile": "FROM x", "initial_tests": "def test_a(): pass"}\n```\n'
        ).dockerfile
        == "FROM x"
    )
    assert parse_completion(json.dumps({"tests": "t", "weights": {"test_a": 1}, "solution": "s"})).weights == {
        "test_a": 1.0
    }
    cases = {
        "Sure! a task": "the reply holds no JSON object",
        "[1, 2]": "the reply holds no JSON object",
        json.dumps({**DESCRIPTION, "extra": 1}): "unexpected ['extra']",
        json.dumps({"title": "t", "instruction": "i"}): "missing ['ground_truth']",
        json.dumps({**DESCRIPTION, "instruction": "  "}): "'instruction' must be a non-empty str",
        json.dumps(
            {**DESCRIPTION, "ground_truth": {**DESCRIPTION["ground_truth"], "files": {"/a": 3}}}
        ): "map paths to text",
    }
    for text, message in cases.items():
        with pytest.raises(MalformedReply, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_description(text)
    with pytest.raises(MalformedReply, match="map test names to numbers"):
        parse_completion(json.dumps({"tests": "t", "weights": {"test_a": "half"}, "solution": "s"}))


def test_near_duplicates_by_shingle_jaccard():
    a, b = shingles("Count the words in a.txt", 2), shingles("count the WORDS in b.txt", 2)
    assert jaccard(a, b) == pytest.approx(3 / 5)  # {count the, the words, words in} shared of 5
    seen = NearDuplicates(0.5, 2)
    seen.add("first", "Count the words in a.txt")
    assert seen.match("count the words in b.txt") == ("first", pytest.approx(0.6))
    assert seen.match("Sort the lines of c.txt") is None
    with pytest.raises(ValueError, match="threshold"):
        NearDuplicates(0, 3)


def test_difficulty_bands():
    bands = {"easy": 0.75, "medium": 0.4, "hard": 0.1}
    assert [difficulty_for(r, bands).value for r in (1.0, 0.75, 0.5, 0.1, 1 / 16)] == [
        "easy",
        "easy",
        "medium",
        "hard",
        "extremely_hard",
    ]
    with pytest.raises(ValueError, match="easy >= medium >= hard"):
        difficulty_for(0.5, {"easy": 0.1, "medium": 0.4, "hard": 0.5})


def test_specs_are_seeded_and_the_funnel_counts_each_stage():
    specs = draw_specs(5, 7, ["a", "b"], ["x"], ["p", "q"])
    assert specs == draw_specs(5, 7, ["a", "b"], ["x"], ["p", "q"]) and len(specs) == 5
    accepted, dropped, waiting = (
        Candidate("c0", 0, specs[0]),
        Candidate("c1", 1, specs[1]),
        Candidate("c2", 2, specs[2]),
    )
    for stage in ("describe", "dedup", "environment", "completion", "solve", "gates", "write"):
        accepted.advance(stage)
    accepted.usage.update(requests=4, prompt_tokens=300, completion_tokens=100, cost_usd=0.02)
    dropped.advance("describe")
    dropped.drop_at("dedup", "near-duplicate", "0.9 similar to c0")
    for candidate, build, test in ((accepted, 20.0, 10.0), (dropped, 0.0, 0.0), (waiting, 0.0, 0.0)):
        candidate.timings.update(build_sec=build, test_sec=test)
    report = funnel([accepted, dropped, waiting], {"environment": 30.0, "completion": 30.0})
    assert accepted.status == "accepted" and report["accepted_tasks"] == ["c0"]
    assert report["stages"]["describe"] == {"entered": 3, "passed": 2}
    assert report["stages"]["dedup"] == {"entered": 2, "passed": 1}
    assert report["stages"]["write"] == {"entered": 1, "passed": 1}
    assert report["drop_reasons"] == {"dedup: near-duplicate": 1}
    assert report["llm"]["tokens_per_accepted"] == 400 and report["llm"]["cost_usd_per_accepted"] == 0.02
    assert report["candidates_per_minute_stages_2_3"] == pytest.approx(1.0)  # one candidate in 60 s


def test_the_same_generate_command_is_the_same_run():
    """A rerun of the same command resumes: its run id is named by its settings, unless one is given."""
    from terminal_rl.config import compose

    def run_id(*overrides):
        return compose("generate", ["source=llm", *overrides]).run.id

    assert run_id() == run_id() and run_id().startswith("generate-llm-")
    assert run_id("seed=3") != run_id() and run_id("generator.candidates=7") != run_id()
    assert run_id("run.id=mine") == "mine"
