from __future__ import annotations

import os

import pytest

from terminal_rl.config import compose


@pytest.fixture(autouse=True)
def _verl_cpu_environment(monkeypatch):
    """verl reads its platform and plugins from the environment when first imported."""
    monkeypatch.setenv("VERL_PLATFORM", os.environ.get("VERL_PLATFORM", "cpu"))
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "terminal_rl.integrations.verl.plugin")
    for name in ("TERMINAL_RL_RUN_ID", "TERMINAL_RL_OUTPUT_ROOT", "TERMINAL_RL_NODE_LOCAL_ROOT"):
        monkeypatch.delenv(name, raising=False)


def train_config(*overrides: str):
    return compose("train", ["run.id=test", *overrides])
