"""The CPU rollout server's abort and resume, as verl's async trainer drives them
(``trainer_colocate_async.py``: abort at the end of sampling, resume after the weights update) and as
verl's vLLM server answers them (``vllm_async_server.py`` l. 931-1045): the request being decoded
returns what it has with ``stop_reason="aborted"``, later ones wait at the closed gate (or are answered
"aborted" at once with ``reject_request``), and resuming lets them through."""

import asyncio

import pytest
from omegaconf import OmegaConf

from terminal_rl.config import compose
from terminal_rl.models.tiny import ensure_tiny_model
from tests.support import set_verl_cpu_environment

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # verl picks its platform, and loads our plugin, from the environment: set for the module's tests.
    with pytest.MonkeyPatch.context() as env:
        set_verl_cpu_environment(env)
        from terminal_rl.integrations.verl.cpu.rollout import HFServer

        root = tmp_path_factory.mktemp("hf_server")
        cfg = compose("train", ["experiment=cpu_smoke", f"run.output_root={root}", "model.path=" + str(root / "tiny")])
        ensure_tiny_model(cfg.model)
        OmegaConf.resolve(cfg)
        rollout = cfg.actor_rollout_ref.rollout
        yield HFServer(rollout, cfg.actor_rollout_ref.model, rollout_mode=None, replica_rank=0)


LONG = {"temperature": 1.0, "max_tokens": 4000, "logprobs": True}


async def until_decoded(server, tokens: int = 5) -> None:
    """Until the request being decoded has ``tokens`` tokens (counted at the server's sampler), so an
    abort finds some out whatever the machine's load."""
    picked, pick = [0], server._pick

    def counting(*args):
        picked[0] += 1
        return pick(*args)

    server._pick = counting
    try:
        while picked[0] < tokens:
            await asyncio.sleep(0.01)
    finally:
        del server._pick  # the class's own again


def test_an_abort_returns_the_tokens_so_far_and_parks_later_requests(server):
    async def main():
        eos, server.eos_ids = server.eos_ids, set()  # decode until the limit or the abort
        decoding = asyncio.ensure_future(server.generate([1, 2, 3], dict(LONG), "a"))
        await until_decoded(server)
        aborted = await server.abort_all_requests()
        partial = await decoding
        parked = asyncio.ensure_future(server.generate([1, 2, 3], {"max_tokens": 4}, "b"))
        await asyncio.sleep(0.3)
        waited = not parked.done()
        server.eos_ids = eos
        await server.resume_generation()
        return aborted, partial, waited, await parked

    aborted, partial, waited, resumed = asyncio.run(main())
    assert aborted["aborted_count"] == 1
    assert partial.stop_reason == "aborted" and 0 < len(partial.token_ids) < 4000
    assert len(partial.log_probs) == len(partial.token_ids), "the partial answer keeps its log-probs"
    assert waited, "a request behind the closed gate waits for the resume"
    assert resumed.stop_reason == "completed" and resumed.token_ids


def test_a_rejecting_gate_answers_aborted_at_once(server):
    async def main():
        await server.abort_all_requests(reject_request=True)
        rejected = await asyncio.wait_for(server.generate([1, 2, 3], {"max_tokens": 4}, "c"), 5)
        await server.resume_generation()
        return rejected

    rejected = asyncio.run(main())
    assert rejected.stop_reason == "aborted" and rejected.token_ids == []


def test_verls_resuming_client_carries_an_aborted_reply_onto_the_new_weights(server):
    """A partial rollout as verl's async trainer makes one: verl's own ``FullyAsyncLLMServerClient``
    (``llm_server.py`` l. 224-349) sends a request, the trainer aborts it mid-decode, pushes weights
    version 1 and reopens the gate; the client resends the prompt plus the tokens so far and returns
    one reply stamped with both versions, which our agent loop and token sample record per turn."""
    from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient

    from terminal_rl.agent.tokens import TokenSample
    from terminal_rl.integrations.verl.agent_loop import reply_versions

    prompts = []

    async def generate(prompt_ids, **kwargs):
        prompts.append(list(prompt_ids))
        return await server.generate(prompt_ids=prompt_ids, **kwargs)

    client = FullyAsyncLLMServerClient(OmegaConf.create({"actor_rollout_ref": {"rollout": {"name": "hf"}}}))

    async def acquire(request_id, **_):
        return "cpu", type("Handle", (), {"generate": type("Remote", (), {"remote": staticmethod(generate)})})

    client._acquire_server = acquire
    client._release_server = lambda *a, **k: None

    limit = 400  # some decoded before the abort, the rest after it

    async def main():
        server.global_steps = 0
        eos, server.eos_ids = server.eos_ids, set()  # decode to the limit unless aborted
        params = dict(LONG, max_tokens=limit)
        reply = asyncio.ensure_future(client.generate("r", prompt_ids=[1, 2, 3], sampling_params=params))
        await until_decoded(server)
        await server.abort_all_requests()
        await server.update_weights([(n, p.detach().clone()) for n, p in server.model.named_parameters()])
        await server.finish_weight_update(1)
        await server.resume_generation()
        output = await reply
        server.eos_ids = eos
        return output

    output = asyncio.run(main())
    [first, resumed] = prompts
    cut = len(resumed) - len(first)
    assert 0 < cut < limit and resumed[:3] == [1, 2, 3] and resumed[3:] == output.token_ids[:cut], "resent with them"
    assert len(output.token_ids) == limit == len(output.log_probs) and output.stop_reason == "length"
    assert reply_versions(output.extra_fields) == (0, 1)
    sample = TokenSample(prompt_ids=[1, 2, 3])
    sample.add_model_turn(output.token_ids, output.log_probs, reply_versions(output.extra_fields), eos_id=0)
    assert sample.turn_versions == [(0, 1)] and (sample.first_version, sample.last_version) == (0, 1)
