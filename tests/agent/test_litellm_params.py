"""Provider parameters come from litellm's own per-model capability data: a reasoning model that
takes no temperature gets none (litellm itself refuses the call otherwise), a chat model keeps it,
against a local OpenAI-compatible test server."""

import asyncio

import litellm
import pytest

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from tests.fake_llm_server import FakeLLMServer

MESSAGES = [{"role": "user", "content": "hi"}]


def sent(server, model: str) -> dict:
    config = LiteLLMConfig(model, server.base_url, "", 0.7, 0, 30, 1)
    asyncio.run(LiteLLMPolicy(config).complete(MESSAGES, 50))
    return server.requests[-1]


def test_a_reasoning_model_gets_no_temperature_and_a_chat_model_keeps_it():
    with FakeLLMServer(lambda body: "ok") as server:
        reasoning, chat = sent(server, "openai/o3-mini"), sent(server, "openai/gpt-4o-mini")
        with pytest.raises(litellm.exceptions.UnsupportedParamsError):  # what drop_params spares us
            asyncio.run(
                litellm.acompletion(
                    model="openai/o3-mini", messages=MESSAGES, api_base=server.base_url, api_key="none", temperature=0.7
                )
            )
    assert "temperature" not in reasoning and reasoning["max_completion_tokens"] == 50
    assert chat["temperature"] == 0.7 and chat["max_tokens"] == 50
