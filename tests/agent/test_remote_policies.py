"""The litellm and token-level policies against a local OpenAI-compatible server the test starts."""

import pytest

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig
from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir
from terminal_rl.sandbox.docker_client import docker_client
from terminal_rl.sandbox.owner import MANAGED, RUN_ID
from tests.fake_llm_server import FakeLLMServer, Fault

pytestmark = pytest.mark.docker

SOLVE = ["<bash>\ncmd: 'cd /app && sed -i \"s/range(len(my_list) - 1)/range(len(my_list))/\" summarize.py'\n</bash>",
         "<finish>\nmessage: fixed\n</finish>"]


def litellm_policy(server, timeout_sec=30.0):
    return LiteLLMPolicy(LiteLLMConfig(model="openai/test-model", base_url=server.base_url, api_key_env="",
                                       temperature=0.0, max_retries=0, timeout_sec=timeout_sec, concurrency=2))


def no_containers_left(run_context):
    return docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}={run_context.run_id}"]}) == []


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


@pytest.mark.parametrize(("fault", "timeout_sec", "detail"), [
    (Fault(500), 30.0, "InternalServerError"),
    (Fault(200, delay_sec=5), 1.0, "Timeout"),
])
def test_server_error_or_timeout_mid_episode_ends_cleanly(tasks, episode, run_context, fault, timeout_sec, detail):
    with FakeLLMServer([SOLVE[0], fault]) as server:
        trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", litellm_policy(server, timeout_sec))
    assert trajectory.termination == "policy_error"
    assert detail in trajectory.termination_detail
    assert len(trajectory.turns) == 1 and trajectory.turns[0].results[0]["ok"]
    assert trajectory.verification is None, "an infrastructure failure is not scored"
    assert no_containers_left(run_context)


def test_token_policy_keeps_the_model_tokens(tasks, episode):
    policy = TokenPolicy(TokenPolicyConfig(base_url="", model="policy", tokenizer=str(bundled_qwen3_tokenizer_dir()),
                                           enable_thinking=True, temperature=1.0, max_retries=0, timeout_sec=30,
                                           concurrency=1))
    tokenizer = policy.chat.tokenizer
    # The second turn is cut off by the token cap: no end-of-turn token.
    turns = [tokenizer.encode(SOLVE[0], add_special_tokens=False) + [policy.chat.eos_id],
             tokenizer.encode("<think>\nalmost done", add_special_tokens=False),
             tokenizer.encode(SOLVE[1], add_special_tokens=False) + [policy.chat.eos_id]]
    with FakeLLMServer(turns) as server:
        policy.config = TokenPolicyConfig(**{**policy.config.__dict__, "base_url": server.base_url})
        trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", policy)
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)
    prompts = [r["prompt"] for r in server.requests]
    assert prompts[0] == policy.chat.prompt_ids(trajectory.messages[:2])
    # Each request extends the previous one by exactly the model's tokens plus the new observation.
    assert prompts[1][: len(prompts[0]) + len(turns[0])] == prompts[0] + turns[0]
    assert prompts[2][: len(prompts[1]) + len(turns[1])] == prompts[1] + turns[1]
    assert prompts[2][len(prompts[1]) + len(turns[1])] == policy.chat.eos_id  # closed for the cut-off turn
