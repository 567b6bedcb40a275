"""Sandbox fixtures: run code in a fresh sandbox against the real engine."""

from __future__ import annotations

import asyncio

import pytest

from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.sandbox import SandboxFactory, SandboxSpec
from terminal_rl.tasks.model import Limits
from tests.support import BASE_IMAGE, SMALL_LIMITS


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
