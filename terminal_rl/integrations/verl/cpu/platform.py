"""The ``cpu`` platform for verl: CPU tensors, gloo collectives, fake Ray "GPU" resources."""

from __future__ import annotations

import contextlib
import functools
from types import ModuleType, SimpleNamespace
from typing import Any, Optional

import torch
import torch.distributed
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry


def _nothing(*args, **kwargs):
    return None


# A torch.cuda-like module for code that calls device-module functions unconditionally.
CPU_DEVICE_MODULE = SimpleNamespace(
    is_available=lambda: True,
    device_count=lambda: 1,
    current_device=lambda: "cpu",
    set_device=_nothing,
    synchronize=_nothing,
    empty_cache=_nothing,
    manual_seed=torch.manual_seed,
    manual_seed_all=torch.manual_seed,
    memory_allocated=lambda *a, **k: 0,
    memory_reserved=lambda *a, **k: 0,
    max_memory_allocated=lambda *a, **k: 0,
    max_memory_reserved=lambda *a, **k: 0,
    reset_peak_memory_stats=_nothing,
    mem_get_info=lambda *a, **k: (0, 0),
    get_rng_state=torch.get_rng_state,
    set_rng_state=torch.set_rng_state,
    Stream=None,
    stream=contextlib.nullcontext,
    current_stream=_nothing,
    Event=None,
    is_bf16_supported=lambda: True,
    get_device_name=lambda *a: "cpu",
    memory=SimpleNamespace(_set_allocator_settings=_nothing),
)


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return CPU_DEVICE_MODULE  # type: ignore[return-value]

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check=False) -> bool:
        return True

    def current_device(self) -> Any:
        # A string, not an int: `.to(get_device_id())` with an int would mean cuda:<n>.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[Optional[int], Optional[int]]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def _deduplicate_backends(init_process_group):
    """verl builds ``f"cpu:gloo,{device}:{backend}"``, i.e. ``cpu:gloo,cpu:gloo`` here, which torch
    rejects as a duplicate device type: keep each device's first backend."""

    @functools.wraps(init_process_group)
    def wrapper(*args, **kwargs):
        backend = kwargs.get("backend")
        if isinstance(backend, str) and "," in backend:
            seen: dict[str, str] = {}
            for part in backend.split(","):
                device, _, name = part.partition(":")
                seen.setdefault(device, part)
            kwargs["backend"] = ",".join(seen.values())
        return init_process_group(*args, **kwargs)

    wrapper.deduplicates_backends = True
    return wrapper


if not getattr(torch.distributed.init_process_group, "deduplicates_backends", False):
    torch.distributed.init_process_group = _deduplicate_backends(torch.distributed.init_process_group)
