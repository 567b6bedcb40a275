"""Shared fixtures: the real dataset, fixture task folders, default limits, the sandbox engine, and the
CPU end-to-end training run."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

import pytest

from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.runner import run_episode
from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import Limits
from terminal_rl.tasks.task_set import task_set_config
from tests.fake_llm_server import FakeLLMServer
from tests.judge.conftest import verdict
from tests.support import ENGINES, launch_training

FIXTURES = Path(__file__).parent / "fixtures"
LIMITS = EpisodeLimits(max_turns=20, max_tokens_per_turn=4000, max_context_tokens=32768, max_consecutive_parse_errors=3)


@pytest.fixture(scope="session")
def tbrl_task_set():
    return task_set_config(compose("prepare").task_set)


@pytest.fixture(scope="session")
def default_limits(tbrl_task_set) -> Limits:
    return tbrl_task_set.limits


@pytest.fixture(scope="session")
def tbrl_csv() -> Path:
    path = (PROJECT_ROOT / "data/terminal_bench_rl.csv").resolve()
    assert path.is_file(), f"the shared dataset must sit beside the project: {path}"
    return path


@pytest.fixture(scope="session")
def tasks(tbrl_csv, default_limits):
    """The shared CSV's tasks by id."""
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


@pytest.fixture(scope="session")
def harbor_fixture() -> Path:
    return FIXTURES / "harbor" / "count-lines"


@pytest.fixture(scope="session")
def tb1_fixture() -> Path:
    return FIXTURES / "tb1" / "fix-greeting"


# Groups that hold one long shared run, scheduled first so the other worker fills in around them.
LONG_GROUPS = ("cpu_run", "slurm", "main_command")
SHARED_RUN_TIMEOUT_SEC = 1800


def pytest_itemcollected(item):
    """``make test`` runs on both cores (pytest-xdist, ``--dist loadgroup``), and a worker builds its
    own session and module fixtures: every test of a module runs in one worker, and so does every
    test of the shared CPU run (``cpu_run``) and of the Slurm cluster, whatever module it is in. A
    module may name its group itself. (Set as each test is collected: xdist reads the groups into the
    test ids in its own ``pytest_collection_modifyitems``.)"""
    if item.get_closest_marker("xdist_group"):
        return
    if "cpu_run" in item.fixturenames:
        group = "cpu_run"
        # Whichever test runs first builds the shared run: 621 s alone on a 2-core AVX2 machine,
        # beyond the default 900 s beside the other worker.
        item.add_marker(pytest.mark.timeout(SHARED_RUN_TIMEOUT_SEC))
    elif item.get_closest_marker("slurm"):
        group = "slurm"
    else:
        group = item.nodeid.split("::")[0]
    item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_modifyitems(config, items):
    """The long groups first, so the other worker fills in around them."""
    order = {group: rank for rank, group in enumerate(LONG_GROUPS)}
    items.sort(key=lambda item: order.get(item.get_closest_marker("xdist_group").args[0], len(order)))


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
    """One run per xdist worker: its run id labels the worker's containers, so a worker's check that none
    are left never sees another worker's live sandboxes."""
    root = tmp_path_factory.mktemp("run")
    run_id = f"pytest-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    return RunContext.from_config(
        RunConfig(id=run_id, output_root=str(root / "shared"), node_local_root=str(root / "local"))
    )


CPU_SMOKE_RUN = ["experiment=cpu_smoke", "run.id=ci", "judge.model=openai/test-judge", "judge.api_key_env="]
SMOKE_TASKS = [
    "csv-file-parsing-amount-sum",
    "csv-filter-by-value",
    "base64-decode-secret-message",
    "security-remove-hardcoded-password",
    "debugging-off-by-one-loop-error",
    "lru-cache-implementation",
]
# Two faulty tasks beside the smoke set in the shared run: an image that cannot build, and a task whose
# every model call raises inside the agent loop (tests/training/faults.py).
IMAGE_FAULT, SESSION_FAULT = "image-build-fault", "model-server-fault"


def fault_task_csv(tbrl_csv: Path, out: Path) -> Path:
    """The smoke tasks of the shared CSV plus the two faulty tasks, as a CSV of our own (the shared one
    is never edited)."""
    import csv

    csv.field_size_limit(1 << 30)
    with tbrl_csv.open(newline="", encoding="utf-8") as source:
        reader = csv.DictReader(source)
        rows = {row["task_id"]: row for row in reader if row["task_id"] in SMOKE_TASKS}
        columns = reader.fieldnames
    broken = {
        **rows["csv-filter-by-value"],
        "task_id": IMAGE_FAULT,
        "difficulty": "medium",
        "dockerfile": "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
        "RUN echo 'this image cannot build' && exit 7\n",
    }
    raising = {**rows["base64-decode-secret-message"], "task_id": SESSION_FAULT, "difficulty": "medium"}
    with out.open("w", newline="", encoding="utf-8") as target:
        writer = csv.DictWriter(target, fieldnames=columns)
        writer.writeheader()
        writer.writerows([*rows.values(), broken, raising])
    return out


def train_cpu_smoke(root, *overrides, timeout=1500, kill_when=None):
    """Run ``python -m terminal_rl.train`` on the CPU smoke experiment (output in ``root``/launch<n>.out
    and .err); ``kill_when(root)`` (polled) SIGKILLs the run and everything it started when it returns true."""
    started = time.monotonic()
    env = {"PYTHONPATH": str(PROJECT_ROOT), "TERMINAL_RL_FAULT_TASK": SESSION_FAULT}
    launches = len(list(Path(root).glob("launch*.out")))
    result = launch_training(
        [*CPU_SMOKE_RUN, f"run.output_root={root}", *overrides],
        Path(root) / f"launch{launches + 1}",
        env=env,
        kill_when=None if kill_when is None else lambda: kill_when(root),
        timeout=timeout,
    )
    return result, time.monotonic() - started


_JUDGE_CALLS = itertools.count(1)


def varying_judge(body):
    """A judge whose opinion differs on every call (the golden-ratio sequence: spread over [0, 1), no
    two calls alike), so early stages carry signal through the judge alone and a group's rollouts
    never tie by chance (a tie has no variance: the online filter would evict the group)."""
    score = round(next(_JUDGE_CALLS) * 0.6180339887 % 1, 4)
    return verdict(todo_planning=score, phase_adherence=score)


def checkpointed(step: int):
    """True once the run's checkpoint of ``step`` is the one a resume would find."""

    def ready(root) -> bool:
        latest = Path(root) / "ci" / "checkpoints" / "latest_checkpointed_iteration.txt"
        return latest.is_file() and latest.read_text().strip() == str(step)

    return ready


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory, tbrl_csv):
    """The CPU end-to-end run shared by every test that needs a trained run's outputs (the most
    expensive thing CI does): experiment=cpu_smoke on the smoke tasks plus two faulty ones, 4 steps.
    The first launch is SIGKILLed right after step 2's checkpoint is saved (before its validation and
    metrics); a second launch resumes from that checkpoint and finishes steps 3 and 4."""
    root = tmp_path_factory.mktemp("train")
    tasks = fault_task_csv(tbrl_csv, root / "fault_tasks.csv")
    overrides = [
        f"task_set.path={tasks}",
        f"task_set.task_ids=[{','.join(SMOKE_TASKS + [IMAGE_FAULT, SESSION_FAULT])}]",
        "trainer.total_training_steps=4",
        '+hardware.env.VERL_USE_EXTERNAL_MODULES="terminal_rl.integrations.verl.plugin,tests.training.faults"',
    ]
    with FakeLLMServer(varying_judge) as judge:
        first, first_sec = train_cpu_smoke(
            root, *overrides, f"judge.base_url={judge.base_url}", kill_when=checkpointed(2)
        )
        assert first.returncode == -9, first.stdout[-4000:] + first.stderr[-4000:]
        resumed, resumed_sec = train_cpu_smoke(root, *overrides, f"judge.base_url={judge.base_url}")
        assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-4000:]
        judge_calls = len(judge.requests)
    return {
        "dir": root / "ci",
        "first": first,
        "resumed": resumed,
        "seconds": (first_sec, resumed_sec),
        "judge_calls": judge_calls,
    }
