"""``evaluate`` and ``filter`` where the policy runs: in this process (``launcher=local``) or as one
Slurm job (``launcher=slurm``), and with ``serve=vllm`` a vLLM server for the policy under test
started beside them (same node, loopback) and stopped when they finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
from omegaconf import DictConfig, OmegaConf

from terminal_rl.console import Console, app_console
from terminal_rl.run_context import RunContext

APPS = ("evaluate", "filter")


def launch_app(app: str, cfg: DictConfig) -> dict | None:
    """Run ``app`` here, or submit it to Slurm and return at once."""
    if cfg.launcher.kind == "slurm":
        from terminal_rl.launch.slurm import submit

        submit(cfg, ServedApp(app, OmegaConf.to_container(cfg, resolve=True)), nodes=1)
        return None
    return run_app(app, cfg)


def run_app(app: str, cfg: DictConfig) -> dict:
    if app not in APPS:
        raise ValueError(f"app {app!r} is not one of {APPS}")
    module = importlib.import_module(f"terminal_rl.{app}")
    with app_console(app, RunContext.from_config(cfg.run), bool(cfg.verbose)) as console, serve_policy(cfg, console):
        return asyncio.run(module.run(cfg, console))


class ServedApp:
    """The Slurm job body: the app (and its server), then this run's sandboxes swept from the node."""

    def __init__(self, app: str, config: dict):
        self.app = app
        self.config = config

    def __call__(self) -> dict:
        from terminal_rl.launch.epilog import mark_job_processes
        from terminal_rl.launch.slurm import janitor

        mark_job_processes()
        cfg = OmegaConf.create(self.config)
        try:
            return run_app(self.app, cfg)
        finally:
            janitor(cfg, RunContext.from_config(cfg.run))


@contextlib.contextmanager
def serve_policy(cfg: DictConfig, console: Console) -> Iterator[None]:
    """With ``serve.kind=command``: start the server, wait until it answers, stop it afterwards."""
    if cfg.serve.kind == "none":
        yield
        return
    if cfg.policy.kind != "token":
        raise ValueError(
            f"a served checkpoint (serve.kind={cfg.serve.kind}) is for policy=token, not policy={cfg.policy.kind}"
        )
    command = [sys.executable if i == 0 and part == "python" else str(part) for i, part in enumerate(cfg.serve.command)]
    log_path = RunContext.from_config(cfg.run).log_dir / "serve.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_ready(cfg.policy.base_url, server, cfg.serve.ready_timeout_sec, log_path)
        console.print(f"serving {cfg.serve.model} at {cfg.policy.base_url} (log: {log_path})")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def wait_until_ready(base_url: str, server: subprocess.Popen, timeout_sec: float, log_path) -> None:
    """Poll ``GET <base_url>/models`` until it answers 200; fail early if the server exits."""
    deadline = time.monotonic() + timeout_sec
    while True:
        if server.poll() is not None:
            raise RuntimeError(
                f"the policy server exited with code {server.returncode} before answering; see {log_path}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/models", timeout=5).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the policy server did not answer {base_url}/models within {timeout_sec:.0f}s; see {log_path}"
            )
        time.sleep(1)
