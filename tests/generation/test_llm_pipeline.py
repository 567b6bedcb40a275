"""The LLM generation pipeline end to end: `python -m terminal_rl.generate source=llm` against a local
OpenAI-compatible server serving scripted generations, through real Docker builds, our sandbox and
our verifier. Six candidates, one per path through the funnel; the accepted tasks load through the
Harbor loader, pass with the oracle and fail untouched; a rerun resumes without asking the LLM again."""

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest

from terminal_rl.agent.evaluation import run_oracle
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.generation.pipeline import prompt
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.loaders.harbor import load_harbor
from tests.fake_llm_server import FakeLLMServer, Fault
from tests.support import SMALL_LIMITS

pytestmark = pytest.mark.docker

BASE = "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest"
NOTES = "one two three\\nfour five\\n"


def description(instruction, files):
    return json.dumps(
        {
            "title": instruction[:30],
            "instruction": instruction,
            "ground_truth": {
                "files": files,
                "paths": sorted(files),
                "expected_final_state": "the output file holds the answer",
            },
        }
    )


def environment(setup):
    return json.dumps(
        {
            "dockerfile": f"FROM {BASE}\nRUN mkdir -p /app && {setup}\n",
            "initial_tests": ("import os\n\ndef test_input_present():\n    assert os.path.isfile('/app/input.txt')\n"),
        }
    )


def completion(output, expected, solution, extra_test=""):
    tests = (
        f"import os\n\ndef test_output_exists():\n    assert os.path.isfile('{output}')\n\n"
        f"def test_output_correct():\n    assert open('{output}').read().split() == {expected!r}\n" + extra_test
    )
    weights = {"test_output_exists": 0.3, "test_output_correct": 0.7}
    if extra_test:
        weights = {"test_output_exists": 0.2, "test_output_correct": 0.6, "test_input_kept": 0.2}
    return json.dumps({"tests": tests, "weights": weights, "solution": solution})


COUNT = "Count the words in /app/input.txt and write the number alone to /app/count.txt."
SORT = "Sort the lines of /app/input.txt alphabetically and write them to /app/sorted.txt."
UPPER = "Write the content of /app/input.txt in upper case to /app/upper.txt, keeping the line order."
REVERSE = "Write the lines of /app/input.txt in reverse order to /app/reversed.txt."
SCRIPT = {
    # Accepted at once.
    "gen-s0-00000": (
        description(COUNT, {"/app/input.txt": "one two three"}),
        [environment(f"printf '{NOTES}' > /app/input.txt")],
        [completion("/app/count.txt", ["5"], "wc -w < /app/input.txt > /app/count.txt\n")],
    ),
    # The Dockerfile fails to build twice; the second repair (round 2) builds and passes.
    "gen-s0-00001": (
        description(SORT, {"/app/input.txt": "b\na\n"}),
        [
            environment("no-such-command --build"),
            environment("exit 7"),
            environment("printf 'pear\\napple\\nfig\\n' > /app/input.txt"),
        ],
        [completion("/app/sorted.txt", ["apple", "fig", "pear"], "sort /app/input.txt > /app/sorted.txt\n")],
    ),
    # A completion test passes in the initial state, every round: dropped.
    "gen-s0-00002": (
        description(UPPER, {"/app/input.txt": "abc"}),
        [environment("echo abc > /app/input.txt")],
        [
            completion(
                "/app/upper.txt",
                ["ABC"],
                "tr a-z A-Z < /app/input.txt > /app/upper.txt\n",
                "\ndef test_input_kept():\n    assert os.path.isfile('/app/input.txt')\n",
            )
        ],
    ),
    # A sound task the policy never solves: dropped by the solve filter.
    "gen-s0-00003": (
        description(REVERSE, {"/app/input.txt": "x\ny\n"}),
        [environment("printf 'x\\ny\\n' > /app/input.txt")],
        [completion("/app/reversed.txt", ["y", "x"], "tac /app/input.txt > /app/reversed.txt\n")],
    ),
    # Not JSON, and not after the correction request either.
    "gen-s0-00004": ("Sure! Here is a task: count files.", [], []),
    # Nearly the first candidate's instruction.
    "gen-s0-00005": (description(COUNT + " Please.", {"/app/input.txt": "a"}), [], []),
}
SOLUTIONS = {
    "gen-s0-00000": "wc -w < /app/input.txt > /app/count.txt",
    "gen-s0-00001": "sort /app/input.txt > /app/sorted.txt",
}


def scripted_generator(body):
    """The reply for a request: by candidate (named in the first user message), stage (the system
    prompt) and round (assistant turns so far), written as a Qwen3 model served without a reasoning
    parser writes it: its thinking first (braces and a draft object included), then prose and a fence."""
    messages = body["messages"]
    if len(messages) == 1:  # the run's probe of its endpoint
        return "ok"
    candidate = json.loads(messages[1]["content"])["candidate"]
    stage = re.search(r"Stage: (\w+)\.", messages[0]["content"]).group(1)
    rounds = sum(m["role"] == "assistant" for m in messages)
    describe, environments, completions = SCRIPT[candidate]
    replies = {"describe": [describe], "environment": environments, "completion": completions}[stage]
    answer = replies[min(rounds, len(replies) - 1)]
    thinking = f'<think>\nThe {stage} stage wants one object, e.g. {{"draft": true}}; keys as {{asked}}.\n</think>\n\n'
    return f"{thinking}Here is the {stage}:\n```json\n{answer}\n```"


def run_generate(*overrides):
    """``python -m terminal_rl.generate source=llm`` with ``overrides``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "terminal_rl.generate", "source=llm", *overrides],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=900,
    )


def generate(root, server, script):
    return run_generate(
        "run.id=gen",
        f"run.output_root={root}",
        "generator.candidates=6",
        "generator.repair_rounds=2",
        "generator.solve_attempts=2",
        "generator.solve_concurrency=2",
        "generator.concurrency=3",
        "generator.llm.model=openai/generator",
        f"generator.llm.base_url={server.base_url}",
        "generator.llm.api_key_env=",
        "policy=scripted",
        f"policy.script={script}",
    )


def test_generation_funnel_end_to_end(tmp_path, sandbox_config, run_context):
    script = tmp_path / "solver.json"
    script.write_text(
        json.dumps(
            {
                **{
                    task: [f"<bash>\ncmd: '{command}'\n</bash>\n<finish>\nmessage: done\n</finish>"]
                    for task, command in SOLUTIONS.items()
                },
                "gen-s0-00003": ["<finish>\nmessage: nothing to do\n</finish>"],
            }
        )
    )
    assert all(f"Stage: {stage}." in prompt(stage) for stage in ("describe", "environment", "completion"))
    with FakeLLMServer(scripted_generator) as server:
        first = generate(tmp_path, server, script)
        assert first.returncode == 0, first.stderr[-3000:]
        asked = len(server.requests) - 1  # less the run's probe of its endpoint
        again = generate(tmp_path, server, script)
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.requests) == asked + 2, "a rerun resumes from the candidates' saved state (its probe only)"

    work = tmp_path / "gen" / "generation"
    report = json.loads((work / "report.json").read_text())
    assert report["accepted_tasks"] == ["gen-s0-00000", "gen-s0-00001"]
    assert sum(report["accepted_by_category"].values()) == sum(report["accepted_by_difficulty"].values()) == 2
    drops = {d["candidate"]: (d["stage"], d["reason"]) for d in report["dropped"]}
    assert drops == {
        "gen-s0-00002": ("completion", "completion tests never passed"),
        "gen-s0-00003": ("solve", "never solved"),
        "gen-s0-00004": ("describe", "malformed output"),
        "gen-s0-00005": ("dedup", "near-duplicate"),
    }
    assert report["stages"]["describe"] == {"entered": 6, "passed": 5}
    assert report["stages"]["environment"] == {"entered": 4, "passed": 4}
    assert report["stages"]["gates"] == {"entered": 2, "passed": 2}
    assert report["llm"]["requests"] == asked and report["llm"]["tokens_per_accepted"] == asked * 15 / 2
    assert report["build_sec"]["total"] > 0 and report["stage_seconds"]["environment"] > report["build_sec"]["mean"]
    assert 0 < report["candidates_per_minute_stages_2_3"] < 60
    repaired = json.loads((work / "candidates" / "gen-s0-00001.json").read_text())
    assert repaired["rounds"]["environment"] == 2
    conversation = json.loads((work / "conversations" / "gen-s0-00001.environment.json").read_text())
    assert "did not build" in conversation[3]["content"] and "no-such-command" in conversation[3]["content"]
    rejected = json.loads((work / "candidates" / "gen-s0-00002.json").read_text())
    assert (
        "already pass in the initial state" in rejected["drop"]["detail"]
        and "test_input_kept" in rejected["drop"]["detail"]
    )
    gates = json.loads((work / "candidates" / "gen-s0-00000.json").read_text())["gates"]
    assert gates["oracle"] == [1.0] * 3 and max(gates["noop"]) < 1 and len(gates["attacks"]) >= 9
    assert "generation funnel: 2 of 6 candidates accepted" in first.stdout, first.stdout[-3000:]
    assert first.stdout.startswith(
        f"terminal_rl generate  run gen  ->  {tmp_path / 'gen'}\n  source      llm: 6 candidates"
    )

    loaded = load_harbor(tmp_path / "gen" / "generated", SMALL_LIMITS)
    assert loaded.problems == [] and [t.id for t in loaded.tasks] == ["gen-s0-00000", "gen-s0-00001"]
    assert all(t.test_weights == {"test_output_exists": 0.3, "test_output_correct": 0.7} for t in loaded.tasks)
    assert {t.metadata["solve_rate"] for t in loaded.tasks} == {"1.000"} and {
        t.difficulty.value for t in loaded.tasks
    } == {"easy"}

    async def oracle_and_noop():
        async with SandboxFactory(sandbox_config, run_context) as factory:
            results = []
            for task in loaded.tasks:
                oracle = await run_oracle(task, factory, f"{task.id}-oracle")
                async with factory.task_sandbox(task) as sandbox:
                    results.append((oracle.score, (await verify(sandbox, task)).score))
            return results

    assert all(oracle == 1.0 and noop < 1.0 for oracle, noop in asyncio.run(oracle_and_noop()))


def test_a_wrong_key_fails_the_run_within_one_call_and_names_the_fix(tmp_path):
    """The endpoint refuses the key (401): the run stops at its one probe call, before any candidate
    or image, and says what to fix."""
    with FakeLLMServer(lambda body: Fault(401)) as server:
        result = run_generate(
            "run.id=wrongkey",
            f"run.output_root={tmp_path}",
            "generator.candidates=3",
            "generator.llm.model=openai/generator",
            f"generator.llm.base_url={server.base_url}",
            "generator.llm.api_key_env=",
        )
        calls = len(server.requests)
    assert result.returncode != 0 and calls == 1, result.stdout[-2000:]
    assert "the generator's model does not answer: openai/generator: AuthenticationError" in result.stdout
    assert "the key is refused" in result.stdout
    assert not (tmp_path / "wrongkey" / "generation" / "candidates").exists(), "no candidate was drawn"


def test_a_base_image_this_machine_cannot_provide_stops_the_run_before_any_llm_call(tmp_path):
    with FakeLLMServer(lambda body: "{}") as server:
        result = run_generate(
            "run.id=nobase",
            f"run.output_root={tmp_path}",
            "generator.candidates=2",
            "generator.base_images=[registry.example/nosuch:1]",
            f"generator.llm.base_url={server.base_url}",
            "generator.llm.api_key_env=",
        )
        calls = len(server.requests)
    assert result.returncode != 0 and calls == 0, result.stdout[-2000:]
    assert "generator.base_images names images this machine cannot provide" in result.stdout
    assert "registry.example/nosuch:1" in result.stdout
