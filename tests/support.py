"""Constants and helpers shared by the tests (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from dataclasses import replace

from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir
from terminal_rl.tasks.model import Limits

BASE_IMAGE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
SMALL_LIMITS = Limits(
    agent_timeout_sec=120,
    verifier_timeout_sec=60,
    build_timeout_sec=600,
    cpus=1.0,
    memory_mb=512,
    pids=128,
    network=False,
)
# Container engines the core sandbox tests run against: option of the `sandbox` config group per engine.
ENGINES = {"dockerd": "docker", "podman": "podman"}


def small_limits(**changes) -> Limits:
    return replace(SMALL_LIMITS, **changes)


SERVED_TASK = "base64-decode-secret-message"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def served_overrides(root, port, command="[python,-m,tests.fake_vllm,--model,${serve.model},--port,${serve.port}]"):
    """evaluate with serve=vllm, its server command replaced (tests.fake_vllm by default), on one task."""
    return [
        "policy=token",
        "serve=vllm",
        f"serve.model={bundled_qwen3_tokenizer_dir()}",
        f"serve.port={port}",
        f"serve.command={command}",
        "serve.ready_timeout_sec=60",
        "task_set=tbrl_smoke",
        f"task_ids=[{SERVED_TASK}]",
        "run.id=served",
        f"run.output_root={root}",
    ]


class LocalActor:
    """An object called the way a Ray actor is (``await actor.method.remote(...)``), in-process."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        method = getattr(self._target, name)

        class _Remote:
            @staticmethod
            def remote(*args, **kwargs):
                future = asyncio.get_running_loop().create_future()
                future.set_result(method(*args, **kwargs))
                return future

        return _Remote


def app_env() -> dict[str, str]:
    """This process's environment for an app started as a user would: without the test run's verl,
    run-directory and pytest variables."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN", "PYTEST"))}


def set_verl_cpu_environment(monkeypatch) -> None:
    """verl reads its platform and plugins from the environment when first imported: set them as a
    ``hardware=cpu`` run does, before any import of verl in this process."""
    import os

    monkeypatch.setenv("VERL_PLATFORM", os.environ.get("VERL_PLATFORM", "cpu"))
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "terminal_rl.integrations.verl.plugin")


def launch_training(
    overrides: list[str], logs, *, env: dict[str, str] | None = None, kill_when=None, timeout: float = 1500
) -> subprocess.CompletedProcess:
    """``python -m terminal_rl.train *overrides`` as its own process group, in ``app_env()`` plus
    ``env``; its output goes to files ``logs``.out/.err (nothing reads a pipe while it runs: a full one
    would stall it). ``kill_when()`` (polled) SIGKILLs the run and everything it started when it
    returns true."""
    import os
    import signal
    import sys
    import time
    from pathlib import Path

    from terminal_rl.config import PROJECT_ROOT

    out, err = Path(f"{logs}.out"), Path(f"{logs}.err")
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "terminal_rl.train", *overrides],
            cwd=PROJECT_ROOT,
            stdout=stdout,
            stderr=stderr,
            text=True,
            env={**app_env(), **(env or {})},
            start_new_session=True,
        )
        try:
            while kill_when is not None and process.poll() is None and not kill_when():
                time.sleep(0.2)
            if kill_when is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(process.args, process.returncode, out.read_text(), err.read_text())
