"""Constants and helpers shared by the tests (fixtures live in conftest.py)."""

from __future__ import annotations

from dataclasses import replace

from terminal_rl.tasks.model import Limits

BASE_IMAGE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
SMALL_LIMITS = Limits(agent_timeout_sec=120, verifier_timeout_sec=60, build_timeout_sec=600, cpus=1.0,
                      memory_mb=512, pids=128, network=False)
# Container engines the core sandbox tests run against: option of the `sandbox` config group per engine.
ENGINES = {"dockerd": "docker", "podman": "podman"}


def small_limits(**changes) -> Limits:
    return replace(SMALL_LIMITS, **changes)
