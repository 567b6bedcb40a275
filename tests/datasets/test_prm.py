"""PRM step scores through the judge service (a local OpenAI-compatible server answers): a thinking
model's reply is read, a rebuild is answered from the judge's cache, the budget and an unusable reply
make an episode's scores missing with the reason."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

from terminal_rl.datasets.prm import StepScorer
from terminal_rl.judge.service import JudgeService
from tests.datasets.test_pure import TURN, episode
from tests.fake_llm_server import FakeLLMServer
from tests.judge.conftest import judge_config  # noqa: F401 (the fixture)


def two_steps(first: int = 4) -> str:
    scores = {"steps": [{"step": 1, "score": first, "reason": "ok"}, {"step": 2, "score": 1, "reason": "loop"}]}
    return f"<think>\nStep 2 repeats step 1.\n</think>\n\nHere are the scores:\n```json\n{json.dumps(scores)}\n```"


def scorer(config, server, control_dir, **changes) -> StepScorer:
    service = JudgeService(replace(config, base_url=server.base_url, **changes), control_dir)
    return StepScorer(service, "v1", 2, (3000, 1500))


def failing(line: int, command: str = "ls"):
    """A failing two-turn episode; episodes with other commands render (and are cached) apart."""
    record = episode("t", 0.0, line=line)
    record.trajectory.turns.append(replace(TURN, model_text=f"<bash>\ncmd: {command}\n</bash>"))
    return record


def test_a_thinking_reply_scores_the_steps_and_a_rebuild_asks_nothing(judge_config, tmp_path):  # noqa: F811
    with FakeLLMServer([two_steps()]) as server:
        first = scorer(judge_config, server, tmp_path)
        records = asyncio.run(first.records(failing(1)))
        again = scorer(judge_config, server, tmp_path)  # a rebuild: a new service on the run's judge directory
        cached = asyncio.run(again.records(failing(1)))
    assert [(r["step_index"], r["step_score"], r["divergence_step"]) for r in records] == [(1, 4, 2), (2, 1, 2)]
    assert cached == records and len(server.requests) == 1
    assert again.usage()["cache_hits"] == 1 and again.usage()["calls"] == 0
    assert "step" in server.requests[0]["messages"][0]["content"].lower(), "the step rubric is the system prompt"


def test_the_budget_and_unusable_replies_leave_an_episode_unscored_with_the_reason(judge_config, tmp_path):  # noqa: F811
    with FakeLLMServer([two_steps(), two_steps(3)]) as server:
        budgeted = scorer(judge_config, server, tmp_path, budget_tokens=15)
        assert isinstance(asyncio.run(budgeted.records(failing(1))), list)
        assert asyncio.run(budgeted.records(failing(2, "pwd"))) == "budget exhausted"
    assert len(server.requests) == 1 and budgeted.usage()["budget_refusals"] == 1
    with FakeLLMServer(["I think it went well.", '{"steps": [{"step": 1, "score": 9}]}']) as server:
        reason = asyncio.run(scorer(judge_config, server, tmp_path / "other").records(failing(3)))
    assert reason.startswith("unparseable reply: 'steps' must list exactly 2 entries"), reason
    assert "could not be used" not in reason and len(server.requests) == 2, "one correction round, then missing"


def test_the_budget_holds_for_episodes_scored_at_once(judge_config, tmp_path):  # noqa: F811
    """The build scores its episodes concurrently: the budget is checked once a call has its slot, after
    the calls before it were counted (one slot: exactly one call within 15 tokens)."""

    async def score_all(scorer):
        return await asyncio.gather(*(scorer.records(failing(n, f"cmd{n}")) for n in range(3)))

    with FakeLLMServer([two_steps()] * 3) as server:
        scorer_ = scorer(judge_config, server, tmp_path, budget_tokens=15, concurrency=1)
        results = asyncio.run(score_all(scorer_))
    assert [isinstance(r, list) for r in results].count(True) == 1 and results.count("budget exhausted") == 2
    assert len(server.requests) == 1


def test_a_judge_that_refuses_the_key_stops_the_build_after_one_call(tmp_path):
    import subprocess
    import sys

    from terminal_rl.config import PROJECT_ROOT
    from tests.fake_llm_server import Fault

    with FakeLLMServer(lambda body: Fault(401)) as server:
        result = subprocess.run(
            [sys.executable, "-m", "terminal_rl.datasets", f"run.output_root={tmp_path}", "run.id=none"]
            + ["prm.enabled=true", "judge.model=openai/test-judge", f"judge.base_url={server.base_url}"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode != 0 and len(server.requests) == 1
    assert "prm.enabled=true, but the judge's model does not answer" in result.stderr
    assert "AuthenticationError" in result.stderr and "the key is refused" in result.stderr
