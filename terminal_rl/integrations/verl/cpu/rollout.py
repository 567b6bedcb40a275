"""The ``hf`` rollout backend: token-in/token-out generation with transformers on CPU, in verl's
HYBRID mode (the rollout shares the actor's "GPU" and receives its weights after every update).

* ``HFReplica`` (RolloutReplicaRegistry) launches one ``HFServer`` Ray actor per replica;
* ``HFServer`` serves ``generate`` (KV-cached decoding, temperature/top-k/top-p, per-token
  log-probabilities) and the lifecycle calls verl makes (sleep, wake_up, abort, ...). Aborting works
  as verl's vLLM server does (``vllm_async_server.py`` ``abort_all_requests``/``resume_generation``,
  l. 931-1045): the request being decoded returns the tokens it has with ``stop_reason="aborted"``,
  and requests arriving before ``resume_generation`` wait at a closed gate (or are answered "aborted"
  at once with ``reject_request``). verl's async client resumes an aborted request on the new weights
  (``llm_server.py`` ``FullyAsyncLLMServerClient``): the partial rollouts of the async trainer;
* ``HFServerAdapter`` (verl's rollout registry) lives in each actor worker and pushes the actor's
  full parameters to its server; every rank drains the weight stream (each tensor is an all-gather).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import ray
import torch
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import HFModelConfig
from verl.workers.rollout.base import _ROLLOUT_REGISTRY, BaseRollout
from verl.workers.rollout.replica import RolloutMode, RolloutReplica, RolloutReplicaRegistry, TokenOutput

NAME = "hf"


def server_name(replica_rank: int, node_rank: int = 0, suffix: str = "") -> str:
    return f"{NAME}_server_{replica_rank}_{node_rank}{suffix}"


class HFServer:
    """One transformers model in CPU memory; generation runs in a thread, one request at a time."""

    def __init__(self, config, model_config, rollout_mode, replica_rank: int, node_rank: int = 0, **_):
        from transformers import AutoModelForCausalLM, GenerationConfig

        self.config = omega_conf_to_dataclass(config)
        self.model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        path = self.model_config.local_path
        self.model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, attn_implementation="eager")
        self.model.eval().requires_grad_(False)
        eos = GenerationConfig.from_pretrained(path).eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) | {self.model_config.tokenizer.eos_token_id}
        self.global_steps: int | None = None
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        # The gate: set while requests may start; ``_aborting`` stops the one being decoded.
        self._open = asyncio.Event()
        self._open.set()
        self._aborting = threading.Event()
        self._rejecting = False
        self._decoding = 0

    async def generate(
        self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str, **kwargs
    ) -> TokenOutput:
        params = dict(sampling_params)
        while not self._open.is_set():
            if self._rejecting:
                return self._output([], [], params, aborted=True)
            await self._open.wait()
        self._decoding += 1
        try:
            token_ids, log_probs, aborted = await asyncio.to_thread(self._generate, list(prompt_ids), params)
        finally:
            self._decoding -= 1
        return self._output(token_ids, log_probs, params, aborted)

    def _output(self, token_ids: list[int], log_probs: list[float], params: dict, aborted: bool) -> TokenOutput:
        return TokenOutput(
            token_ids=token_ids,
            log_probs=log_probs if params.get("logprobs") else None,
            stop_reason="aborted" if aborted else "completed",
            num_preempted=0,
            extra_fields={"global_steps": self.global_steps or 0, "num_cached_tokens": 0},
        )

    @torch.no_grad()
    def _generate(self, prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float], bool]:
        config = self.config
        limit = config.max_model_len or config.prompt_length + config.response_length
        default = min(config.response_length, config.prompt_length + config.response_length - len(prompt_ids))
        max_tokens = int(params.pop("max_tokens", params.pop("max_new_tokens", default)))
        max_tokens = max(1, min(max_tokens, limit - len(prompt_ids)))
        temperature = float(params.get("temperature", 1.0))
        top_k, top_p = int(params.get("top_k", -1) or -1), float(params.get("top_p", 1.0) or 1.0)
        with self._lock:
            tokens, log_probs = [], []
            if self._aborting.is_set():
                return tokens, log_probs, True
            out = self.model(torch.tensor([prompt_ids]), use_cache=True)
            past, logits = out.past_key_values, out.logits[0, -1]
            for _ in range(max_tokens):
                if self._aborting.is_set():
                    return tokens, log_probs, True
                scaled = logits / (temperature if temperature > 0 else 1.0)
                token = self._pick(scaled, temperature, top_k, top_p)
                tokens.append(token)
                log_probs.append(float(torch.log_softmax(scaled, dim=-1)[token]))
                if token in self.eos_ids and not config.ignore_eos:
                    break
                out = self.model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past, logits = out.past_key_values, out.logits[0, -1]
        return tokens, log_probs, False

    @staticmethod
    def _pick(scaled: torch.Tensor, temperature: float, top_k: int, top_p: float) -> int:
        if temperature <= 0 or top_k == 1:
            return int(scaled.argmax())
        if top_k > 0:
            kth = torch.topk(scaled, top_k).values[-1]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        probs = torch.softmax(scaled, dim=-1)
        if top_p < 1.0:
            ordered, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(ordered, dim=-1) - ordered < top_p
            probs = torch.zeros_like(probs).scatter(0, order[keep], ordered[keep])
        return int(torch.multinomial(probs / probs.sum(), 1))

    async def update_weights(self, named_tensors: list[tuple[str, torch.Tensor]]) -> None:
        # state_dict names tied weights under every name (lm_head.weight and embed_tokens.weight).
        parameters = self.model.state_dict(keep_vars=True)
        with self._lock:
            for name, tensor in named_tensors:
                if name not in parameters:
                    raise KeyError(f"weight {name!r} from the actor has no counterpart in the rollout model")
                parameters[name].data.copy_(tensor.to(parameters[name].dtype))
                self._seen.add(name)

    async def finish_weight_update(self, global_steps: int | None) -> None:
        if global_steps is not None:
            self.global_steps = int(global_steps)
        missing = {n for n, _ in self.model.named_parameters()} - self._seen
        if missing:
            raise RuntimeError(f"the actor's weights did not cover {sorted(missing)[:5]}")

    # Lifecycle calls verl makes on every backend; weights stay resident in CPU memory.
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        """Close the gate, stop the request being decoded (it returns what it has) and wait until it
        has; the gate stays closed until ``resume_generation``."""
        self._open.clear()
        self._rejecting = reject_request
        aborted = self._decoding
        self._aborting.set()
        while self._decoding:
            await asyncio.sleep(0.01)
        return {"aborted_count": aborted, "request_ids": []}

    async def resume_generation(self) -> None:
        self._aborting.clear()
        self._rejecting = False
        self._open.set()

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def start_profile(self, **kwargs) -> None:
        return None

    async def stop_profile(self) -> None:
        return None

    async def get_rollout_config(self):
        return self.config


class HFReplica(RolloutReplica):
    async def launch_servers(self) -> None:
        if self.rollout_mode != RolloutMode.HYBRID:
            raise NotImplementedError("the hf backend supports verl's HYBRID rollout mode only")
        if self.config.pipeline_model_parallel_size != 1:
            raise ValueError("the hf backend does not support pipeline parallelism")
        server = (
            ray.remote(HFServer)
            .options(
                name=server_name(self.replica_rank, 0, self.name_suffix),
                num_cpus=0,
                num_gpus=0,
                max_concurrency=self.max_concurrency,
            )
            .remote(
                config=self.config,
                model_config=self.model_config,
                rollout_mode=self.rollout_mode,
                replica_rank=self.replica_rank,
            )
        )
        await server.wake_up.remote()  # surfaces model-loading errors at launch
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"127.0.0.1:{NAME}-{self.replica_rank}{self.name_suffix}"


class HFServerAdapter(BaseRollout):
    """In each actor worker: finds its replica's server and pushes the actor's full weights to it."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1):
        import os

        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", 0))
        world = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self._has_server = rank % world == 0
        self.server_handle = None

    @property
    def is_leader_rank(self) -> bool:
        return self._has_server

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(
        self, weights, global_steps: int | None = None, wire_format: str = "named_tensors", **kwargs
    ) -> None:
        if wire_format != "named_tensors" or kwargs.get("peft_config") is not None:
            raise NotImplementedError("the hf backend takes full named tensors (no LoRA adapters, no deltas)")
        if not self._has_server:
            for _ in weights:  # every rank must take part in each tensor's all-gather
                pass
            return
        if self.server_handle is None:
            self.server_handle = ray.get_actor(server_name(self.replica_rank))
        bucket, size, limit = [], 0, self.config.checkpoint_engine.update_weights_bucket_megabytes * 2**20
        for name, tensor in weights:
            tensor = tensor.detach().to("cpu").contiguous()
            bucket.append((name, tensor))
            size += tensor.numel() * tensor.element_size()
            if size >= limit:
                await self.server_handle.update_weights.remote(bucket)
                bucket, size = [], 0
        if bucket:
            await self.server_handle.update_weights.remote(bucket)
        await self.server_handle.finish_weight_update.remote(global_steps)


RolloutReplicaRegistry.register(NAME, lambda: HFReplica)
_ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.HFServerAdapter"
