"""Shared fixtures: the real dataset, fixture task folders and default limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.tasks.model import Limits
from terminal_rl.tasks.task_set import task_set_config

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def tbrl_task_set():
    return task_set_config(compose("prepare").task_set)


@pytest.fixture(scope="session")
def default_limits(tbrl_task_set) -> Limits:
    return tbrl_task_set.limits


@pytest.fixture(scope="session")
def tbrl_csv() -> Path:
    path = (PROJECT_ROOT / "../shared/datasets/terminal_bench_rl.csv").resolve()
    assert path.is_file(), f"the shared dataset must sit beside the project: {path}"
    return path


@pytest.fixture(scope="session")
def harbor_fixture() -> Path:
    return FIXTURES / "harbor" / "count-lines"


@pytest.fixture(scope="session")
def tb1_fixture() -> Path:
    return FIXTURES / "tb1" / "fix-greeting"
