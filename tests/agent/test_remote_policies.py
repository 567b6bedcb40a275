"""The litellm and token-level policies against a local OpenAI-compatible server the test starts."""

import pytest

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig
from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.fake_llm_server import FakeLLMServer, Fault

pytestmark = pytest.mark.docker

SOLVE = [
    "<bash>\ncmd: 'cd /app && sed -i \"s/range(len(my_list) - 1)/range(len(my_list))/\" summarize.py'\n</bash>",
    "<finish>\nmessage: fixed\n</finish>",
]


def litellm_policy(server, timeout_sec=30.0):
    return LiteLLMPolicy(
        LiteLLMConfig(
            model="openai/test-model",
            base_url=server.base_url,
            api_key_env="",
            temperature=0.0,
            max_retries=0,
            timeout_sec=timeout_sec,
            concurrency=2,
        )
    )


def no_containers_left(run_context):
    return (
        docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}={run_context.run_id}"]})
        == []
    )


def test_litellm_policy_solves_a_task(tasks, episode, run_context):
    with FakeLLMServer(SOLVE) as server:
        trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", litellm_policy(server))
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["model"] == "test-model"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in server.requests[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert first["max_tokens"] == 4000
    assert trajectory.turns[0].context_tokens == 15
    assert no_containers_left(run_context)


@pytest.mark.parametrize(
    ("fault", "timeout_sec", "detail"),
    [
        (Fault(500), 30.0, "InternalServerError"),
        (Fault(200, delay_sec=5), 1.0, "Timeout"),
    ],
)
def test_server_error_or_timeout_mid_episode_ends_cleanly(tasks, episode, run_context, fault, timeout_sec, detail):
    with FakeLLMServer([SOLVE[0], fault]) as server:
        trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", litellm_policy(server, timeout_sec))
    assert trajectory.termination == "policy_error"
    assert detail in trajectory.termination_detail
    assert len(trajectory.turns) == 1 and trajectory.turns[0].results[0]["ok"]
    assert trajectory.verification is None, "an infrastructure failure is not scored"
    assert no_containers_left(run_context)


def token_policy(server, max_retries=0):
    return TokenPolicy(
        TokenPolicyConfig(
            base_url=server.base_url,
            model="policy",
            tokenizer=str(bundled_qwen3_tokenizer_dir()),
            enable_thinking=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            max_retries=max_retries,
            timeout_sec=30,
            concurrency=1,
        )
    )


def test_token_policy_speaks_vllms_completions_schema(tasks, episode):
    """The request carries what vLLM 0.24's CompletionRequest reads (prompt ids, sampling, logprobs,
    return_token_ids); the reply is read from the fields vLLM fills."""
    tokenizer = load_tokenizer(str(bundled_qwen3_tokenizer_dir()))
    turns = [tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id] for text in SOLVE]
    with FakeLLMServer(turns) as server:
        trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", token_policy(server))
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)
    first = server.requests[0]
    assert first["path"] == "/v1/completions" and first["return_token_ids"] is True and first["logprobs"] == 1
    assert all(isinstance(t, int) for t in first["prompt"]) and first["max_tokens"] == 4000
    assert (first["temperature"], first["top_p"], first["top_k"]) == (1.0, 1.0, 0), "sampling sent, never defaulted"


def test_token_policy_fails_fast_on_a_bad_request_and_retries_a_server_error(tasks, episode):
    with FakeLLMServer([Fault(400)]) as server:
        bad = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", token_policy(server, max_retries=2))
    assert bad.termination == "policy_error" and "HTTP 400: BadRequestError: scripted fault" in bad.termination_detail
    assert len(server.requests) == 1, "a 4xx is final: never retried"
    with FakeLLMServer([Fault(500), Fault(500), Fault(500)]) as server:
        broken = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", token_policy(server, max_retries=2))
    assert broken.termination == "policy_error" and len(server.requests) == 3
