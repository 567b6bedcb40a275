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

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from terminal_rl.integrations.verl.cpu.rollout import HFServer

    root = tmp_path_factory.mktemp("hf_server")
    cfg = compose("train", ["experiment=cpu_smoke", f"run.output_root={root}", "model.path=" + str(root / "tiny")])
    ensure_tiny_model(cfg.model)
    OmegaConf.resolve(cfg)
    rollout = cfg.actor_rollout_ref.rollout
    return HFServer(rollout, cfg.actor_rollout_ref.model, rollout_mode=None, replica_rank=0)


LONG = {"temperature": 1.0, "max_tokens": 4000, "logprobs": True}


def test_an_abort_returns_the_tokens_so_far_and_parks_later_requests(server):
    async def main():
        eos, server.eos_ids = server.eos_ids, set()  # decode until the limit or the abort
        decoding = asyncio.ensure_future(server.generate([1, 2, 3], dict(LONG), "a"))
        await asyncio.sleep(0.5)
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
