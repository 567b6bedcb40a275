from __future__ import annotations

import json
from dataclasses import replace

import pytest

from terminal_rl.config import compose, to_dataclass
from terminal_rl.judge.service import JudgeConfig, JudgeRequest

VERDICT = {
    "action_output_success": 1.0,
    "todo_planning": 1.0,
    "phase_adherence": 1.0,
    "tool_effectiveness": 1.0,
    "modifiers": {},
    "penalties": {},
    "rationale": "textbook",
}


def verdict(**parts) -> str:
    return json.dumps({**VERDICT, **parts})


@pytest.fixture
def judge_config():
    """The default judge config pointed at a local test server (set base_url per test)."""
    node = compose("judge_cli").judge
    return replace(
        to_dataclass(node, JudgeConfig),
        model="openai/judge-a",
        api_key_env="",
        max_retries=2,
        backoff_sec=0.01,
        timeout_sec=5,
    )


def request(n: int = 0) -> JudgeRequest:
    return JudgeRequest("Fix the bug.", "Container built from debian.", f"1 turns; trajectory {n}")
