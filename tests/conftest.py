"""Shared fixtures: the real dataset, fixture task folders, default limits, the sandbox engine, and the
CPU end-to-end training run."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.tasks.model import Limits
from terminal_rl.tasks.task_set import task_set_config
from tests.fake_llm_server import FakeLLMServer
from tests.judge.conftest import verdict
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


CPU_SMOKE_RUN = ["experiment=cpu_smoke", "run.id=ci", "judge.model=openai/test-judge", "judge.api_key_env="]


def train_cpu_smoke(root, *overrides, timeout=1500):
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN"))}
    result = subprocess.run([sys.executable, "-m", "terminal_rl.train", *CPU_SMOKE_RUN, f"run.output_root={root}", *overrides],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    return result, time.monotonic() - started


def random_judge(body):
    """A judge with an opinion that varies: early stages then carry signal through the judge alone."""
    return verdict(todo_planning=round(random.random(), 2), phase_adherence=round(random.random(), 2))


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory):
    """The CPU end-to-end run (experiment=cpu_smoke, 2 steps, then a resume to step 3), shared by
    every test that needs a trained run's outputs: it is the most expensive thing CI does."""
    root = tmp_path_factory.mktemp("train")
    with FakeLLMServer(random_judge) as judge:
        first, first_sec = train_cpu_smoke(root, "trainer.total_training_steps=2", f"judge.base_url={judge.base_url}")
        assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
        resumed, resumed_sec = train_cpu_smoke(root, "trainer.total_training_steps=3", f"judge.base_url={judge.base_url}")
        assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-4000:]
        judge_calls = len(judge.requests)
    return {"dir": root / "ci", "first": first, "resumed": resumed, "seconds": (first_sec, resumed_sec),
            "judge_calls": judge_calls}
