"""Agent fixtures: run whole episodes in real sandboxes."""

from __future__ import annotations

import asyncio

import pytest

from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.runner import run_episode
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv

LIMITS = EpisodeLimits(max_turns=20, max_tokens_per_turn=4000, max_context_tokens=32768,
                       max_consecutive_parse_errors=3)


@pytest.fixture(scope="session")
def tasks(tbrl_csv, default_limits):
    return {t.id: t for t in load_tbrl_csv(tbrl_csv, default_limits).tasks}


@pytest.fixture
def episode(sandbox_config, run_context):
    """``episode(task, protocol_name, policy, limits=LIMITS)`` -> the finished, verified trajectory."""

    def run(task, protocol: str, policy, limits: EpisodeLimits = LIMITS):
        async def main():
            async with SandboxFactory(sandbox_config, run_context) as factory:
                return await run_episode(task, factory, make_protocol(protocol), policy, limits)

        return asyncio.run(main())

    return run
