"""Shared fixtures: the real dataset, fixture task folders, default limits, the sandbox engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.tasks.model import Limits
from terminal_rl.tasks.task_set import task_set_config
from tests.support import ENGINES

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
