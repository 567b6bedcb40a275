from __future__ import annotations

import pytest

from terminal_rl.config import compose
from tests.support import set_verl_cpu_environment


@pytest.fixture(autouse=True)
def _verl_cpu_environment(monkeypatch):
    set_verl_cpu_environment(monkeypatch)
    for name in ("TERMINAL_RL_RUN_ID", "TERMINAL_RL_OUTPUT_ROOT", "TERMINAL_RL_NODE_LOCAL_ROOT"):
        monkeypatch.delenv(name, raising=False)


def train_config(*overrides: str):
    return compose("train", ["run.id=test", *overrides])
