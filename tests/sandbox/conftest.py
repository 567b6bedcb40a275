"""Sandbox fixtures: a factory against the real daemon and a helper to run code in a sandbox."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from terminal_rl.config import compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.sandbox import SandboxFactory, SandboxSpec
from terminal_rl.tasks.model import Limits

BASE_IMAGE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
SMALL_LIMITS = Limits(agent_timeout_sec=120, verifier_timeout_sec=60, build_timeout_sec=600, cpus=1.0,
                      memory_mb=512, pids=128, network=False)


# Container engines the core tests run against: config option of the `sandbox` group per engine.
ENGINES = {"dockerd": "docker", "podman": "podman"}


def pytest_generate_tests(metafunc):
    """Tests marked ``both_engines`` run against dockerd and podman; the others against dockerd."""
    if "engine" in metafunc.fixturenames:
        both = metafunc.definition.get_closest_marker("both_engines") is not None
        metafunc.parametrize("engine", list(ENGINES) if both else ["dockerd"], scope="session")


@pytest.fixture(scope="session")
def sandbox_config(engine) -> SandboxConfig:
    return SandboxConfig.from_node(compose("services", [f"sandbox={ENGINES[engine]}"]).sandbox)


@pytest.fixture(scope="session")
def run_context(tmp_path_factory) -> RunContext:
    root = tmp_path_factory.mktemp("run")
    return RunContext.from_config(RunConfig(id="pytest", output_root=str(root / "shared"),
                                            node_local_root=str(root / "local")))


@pytest.fixture
def in_sandbox(sandbox_config, run_context):
    """``in_sandbox(fn, limits=..., files=..., config=...)`` runs ``await fn(sandbox)`` in a fresh sandbox."""

    def run(fn, limits: Limits = SMALL_LIMITS, files: dict[str, bytes] | None = None,
            config: SandboxConfig | None = None, image: str = BASE_IMAGE):
        async def main():
            async with SandboxFactory(config or sandbox_config, run_context) as factory:
                async with factory.sandbox(SandboxSpec(image, limits, files or {})) as sandbox:
                    return await fn(sandbox)

        return asyncio.run(main())

    return run


def small_limits(**changes) -> Limits:
    return replace(SMALL_LIMITS, **changes)
