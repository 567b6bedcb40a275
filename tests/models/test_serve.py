"""The CPU completions server (serve=hf) on the tiny model: our token policy's client takes its
answers, and they are the model's own greedy tokens and log-probs, checked with a plain forward pass."""

import asyncio
import threading

import pytest
import torch

from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig
from terminal_rl.models.serve import Generator, serve
from terminal_rl.models.tiny import make_tiny_model
from tests.support import free_port

ARCHITECTURE = dict(
    layers=2,
    hidden_size=64,
    attention_heads=4,
    kv_heads=2,
    head_dim=16,
    intermediate_size=128,
    vocab_size=151936,
    context_length=4096,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", ARCHITECTURE, "qwen3", seed=0)


@pytest.fixture(scope="module")
def server(tiny):
    generator = Generator(str(tiny))
    port = free_port()
    http = serve(generator, port, "policy")
    threading.Thread(target=http.serve_forever, daemon=True).start()
    yield generator, f"http://127.0.0.1:{port}/v1"
    http.shutdown()
    http.server_close()


def test_the_token_policy_gets_the_models_greedy_tokens_and_their_logprobs(tiny, server):
    generator, base_url = server
    config = TokenPolicyConfig(
        base_url=base_url,
        model="policy",
        tokenizer=str(tiny),
        enable_thinking=False,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        max_retries=0,
        timeout_sec=60,
        concurrency=1,
    )
    policy = TokenPolicy(config)
    prompt = policy.chat.prompt_ids([{"role": "user", "content": "List the files."}])
    generation = asyncio.run(policy.generate(prompt, 6))
    assert 1 <= len(generation.token_ids) <= 6 and len(generation.log_probs) == len(generation.token_ids)
    ids, expected_logprobs = list(prompt), []
    with torch.no_grad():  # greedy decoding by hand: argmax of each next-token distribution
        for _ in generation.token_ids:
            logits = generator.model(torch.tensor([ids])).logits[0, -1]
            token = int(logits.argmax())
            expected_logprobs.append(float(torch.log_softmax(logits, -1)[token]))
            ids.append(token)
    assert generation.token_ids == ids[len(prompt) :]
    assert generation.log_probs == pytest.approx(expected_logprobs, abs=1e-4)


def test_a_prompt_that_is_not_token_ids_is_refused_with_vllms_error_shape(server):
    import httpx

    _, base_url = server
    response = httpx.post(f"{base_url}/completions", json={"model": "policy", "prompt": "ls", "max_tokens": 2})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "prompt must be a list of token ids",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
