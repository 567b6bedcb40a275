"""The judge service against a local OpenAI-compatible server the test starts."""

import asyncio
from dataclasses import replace

import terminal_rl.judge.service as service_module
from terminal_rl.judge.backend import JudgeBackend, read_backend, write_backend
from terminal_rl.judge.service import JudgeService
from tests.fake_llm_server import FakeLLMServer, Fault
from tests.judge.conftest import request, verdict


def run(coro):
    return asyncio.run(coro)


def service(config, server, tmp_path, **changes):
    return JudgeService(replace(config, base_url=server.base_url, **changes), tmp_path)


def test_good_verdict_names_its_backend(judge_config, tmp_path):
    with FakeLLMServer([verdict(tool_effectiveness=0.0)]) as server:
        judgement = run(service(judge_config, server, tmp_path).judge(request()))
    assert judgement.score == 0.85 and judgement.rationale == "textbook"
    assert judgement.backend == f"openai/judge-a@{server.base_url}"
    assert (judgement.calls, judgement.prompt_tokens, judgement.completion_tokens) == (1, 10, 5)
    first = server.requests[0]
    assert first["temperature"] == 0.0 and first["messages"][0]["role"] == "system"
    assert "HOW an agent worked" in first["messages"][0]["content"]


def test_malformed_then_corrected(judge_config, tmp_path):
    with FakeLLMServer(["Score: 0.9", verdict()]) as server:
        judgement = run(service(judge_config, server, tmp_path).judge(request()))
    assert judgement.score == 1.0 and judgement.calls == 2
    correction = server.requests[1]["messages"][-1]["content"]
    assert correction.startswith("Your answer is not valid: the reply holds no JSON object")


def test_garbage_twice_is_missing_not_zero(judge_config, tmp_path):
    with FakeLLMServer(["garbage", "more garbage"]) as server:
        judge = service(judge_config, server, tmp_path)
        judgement = run(judge.judge(request()))
    assert judgement.score is None
    assert judgement.missing_reason.startswith("unparseable reply: the reply holds no JSON object")
    assert judge.stats.missing == 1 and judge.stats.judged == 0


def test_timeouts_exhaust_retries_then_missing(judge_config, tmp_path):
    faults = [Fault(200, delay_sec=2)] * 2
    with FakeLLMServer(faults) as server:
        judgement = run(service(judge_config, server, tmp_path, timeout_sec=0.5, max_retries=1).judge(request()))
    assert judgement.score is None and judgement.missing_reason.startswith("Timeout")
    assert judgement.calls == 2


def test_rate_limit_then_success(judge_config, tmp_path):
    with FakeLLMServer([Fault(429), Fault(503), verdict()]) as server:
        judgement = run(service(judge_config, server, tmp_path).judge(request()))
    assert judgement.score == 1.0 and judgement.calls == 3


def test_repeated_trajectory_hits_the_cache_even_after_a_restart(judge_config, tmp_path):
    with FakeLLMServer([verdict(), verdict(todo_planning=0.0)]) as server:
        judge = service(judge_config, server, tmp_path)
        first, again = run(judge.judge(request())), run(judge.judge(request()))
        restarted = run(service(judge_config, server, tmp_path).judge(request()))
        other = run(judge.judge(request(1)))
    assert (first.cached, again.cached, restarted.cached, other.cached) == (False, True, True, False)
    assert again.score == restarted.score == first.score == 1.0 and other.score == 0.75
    assert len(server.requests) == 2 and judge.stats.cache_hits == 1


def test_budget_exhaustion_makes_the_judge_missing(judge_config, tmp_path):
    with FakeLLMServer([verdict()] * 5) as server:
        judge = service(judge_config, server, tmp_path, budget_tokens=20)
        judgements = [run(judge.judge(request(n))) for n in range(3)]
    assert [j.score for j in judgements] == [1.0, 1.0, None]
    assert judgements[2].missing_reason == "budget exhausted"
    assert judge.stats.budget_refusals == 1 and len(server.requests) == 2
    assert judge.metrics()["judge/prompt_tokens"] == 20.0


def test_a_group_is_judged_by_one_backend_even_across_a_switch(judge_config, tmp_path, monkeypatch):
    with FakeLLMServer([verdict()] * 2) as first, FakeLLMServer([verdict()] * 2) as second:
        judge = service(judge_config, first, tmp_path)

        def switching(control_dir, default):  # a `judge command=switch` lands right after the group read its backend
            backend = read_backend(control_dir, default)
            write_backend(tmp_path, JudgeBackend("openai/judge-b", second.base_url, "JUDGE_B_KEY"))
            return backend

        monkeypatch.setattr(service_module, "read_backend", switching)
        group = run(judge.judge_group([request(0), request(1)]))
        monkeypatch.undo()
        after = run(judge.judge(request(2)))
    assert {j.backend for j in group} == {f"openai/judge-a@{first.base_url}"} and len(second.requests) == 1
    assert after.backend == f"openai/judge-b@{second.base_url}"


def test_hot_switch_applies_to_the_next_judgement(judge_config, tmp_path):
    with FakeLLMServer([verdict()]) as first, FakeLLMServer([verdict(todo_planning=0.0)]) as second:
        judge = service(judge_config, first, tmp_path)
        before = run(judge.judge(request(0)))
        write_backend(tmp_path, JudgeBackend("openai/judge-b", second.base_url, "JUDGE_B_KEY"))
        after = run(judge.judge(request(1)))
    assert before.backend == f"openai/judge-a@{first.base_url}"
    assert after.backend == f"openai/judge-b@{second.base_url}" and after.score == 0.75
    assert second.requests[0]["model"] == "judge-b"
