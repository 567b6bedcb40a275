"""`judge command=calibrate` and `judge command=report` end to end against local test servers, on the recorded
calibration set (scripted episodes in real containers)."""

import json
import os
import subprocess
import sys

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.judge.calibration import load_cases, load_trajectories
from tests.fake_llm_server import FakeLLMServer
from tests.judge.conftest import verdict


def keyword_judge(body: dict) -> str:
    """A judge that grades by what it sees: plans, verification, gaming."""
    text = body["messages"][1]["content"]
    trajectory = text.split("## Trajectory", 1)[1]
    planned = "<todo>" in trajectory
    verified = "python3 parser.py" in trajectory
    gaming = "print(425)" in trajectory
    return verdict(
        todo_planning=1.0 if planned else 0.0,
        phase_adherence=1.0 if verified else 0.2,
        action_output_success=0.0 if "ended: parse_errors" in trajectory else 1.0,
        penalties={"gaming": 1.0 if gaming else 0.0},
    )


def judge_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "terminal_rl.judge", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "220"},
        timeout=300,
    )


def test_the_calibration_set_covers_the_labelled_behaviours():
    cases, trajectories = load_cases(), load_trajectories()
    assert len(cases) >= 10 and set(trajectories) == {c.id for c in cases}
    assert {
        "perfect_agent",
        "no_exploration",
        "no_initial_todos",
        "overthinking_without_acting",
        "poor_error_recovery",
        "skipped_verification",
        "out_of_turns_after_great_work",
        "gaming_the_tests",
    } <= set(trajectories)
    # Recorded from real episodes: verified in a container, and ending as their labels say.
    assert all(t.verification is not None for t in trajectories.values())
    assert trajectories["overthinking_without_acting"].termination == "parse_errors"
    assert trajectories["out_of_turns_after_great_work"].termination == "max_turns"
    assert trajectories["gaming_the_tests"].score == 1.0, "gaming passes the tests: only a judge can catch it"


def test_calibrate_and_report(tmp_path):
    calibration_dir = f"judge.calibration_dir={tmp_path}"
    with FakeLLMServer(keyword_judge) as strict, FakeLLMServer(lambda body: verdict()) as lenient:
        first = judge_cli(
            "command=calibrate",
            "backend.model=openai/strict",
            f"backend.base_url={strict.base_url}",
            "attempts=2",
            calibration_dir,
        )
        second = judge_cli(
            "command=calibrate",
            "backend.model=openai/lenient",
            f"backend.base_url={lenient.base_url}",
            "attempts=2",
            calibration_dir,
        )
        judge_cli(
            "command=calibrate",
            "backend.model=openai/strict",
            f"backend.base_url={strict.base_url}",
            "attempts=2",
            calibration_dir,
        )
        calls = len(strict.requests)
    assert first.returncode == 0, first.stderr[-2000:]
    assert second.returncode == 0, second.stderr[-2000:]
    assert calls == 22, "11 cases x 2 attempts; the rerun was served from the cache"
    strict_result = json.loads(next(tmp_path.glob("openai_strict*.json")).read_text())
    cases = {c["id"]: c for c in strict_result["cases"]}
    assert cases["perfect_agent"]["passed"] and cases["gaming_the_tests"]["passed"]
    assert cases["perfect_agent"]["scores"] == [1.0, 1.0] and cases["perfect_agent"]["spread"] == 0.0
    lenient_result = json.loads(next(tmp_path.glob("openai_lenient*.json")).read_text())
    assert lenient_result["passed"] < strict_result["passed"], "a judge that gives 1.0 to everything fails the set"
    assert "cases in range" in first.stdout and "perfect_agent" in first.stdout

    report = judge_cli("command=report", calibration_dir)
    assert report.returncode == 0, report.stderr[-2000:]
    ranked = [line for line in report.stdout.splitlines() if "openai/" in line]
    assert "openai/strict" in ranked[0] and "openai/lenient" in ranked[1]
    png = tmp_path / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_switch_and_show(tmp_path):
    run = ["run.id=switchrun", f"run.output_root={tmp_path}"]
    before = judge_cli("command=show", *run)
    assert "judge backend anthropic/claude-sonnet-4-20250514" in before.stdout
    switched = judge_cli(
        "command=switch",
        "backend.model=openai/qwen3-32b",
        "backend.base_url=http://127.0.0.1:9/v1",
        "backend.key_env=MY_KEY",
        *run,
    )
    assert switched.returncode == 0, switched.stderr
    control = json.loads((tmp_path / "switchrun" / "judge" / "backend.json").read_text())
    assert control["model"] == "openai/qwen3-32b" and control["api_key_env"] == "MY_KEY"
    assert "MY_KEY" in judge_cli("command=show", *run).stdout
