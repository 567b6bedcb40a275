"""``evaluate`` and ``filter`` where the policy runs: in this process (``launcher=local``) or as one
Slurm job (``launcher=slurm``), and with ``serve=vllm`` a vLLM server for the policy under test
started beside them (same node, loopback) and stopped when they finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import httpx
from omegaconf import DictConfig

from terminal_rl.console import Console, app_console
from terminal_rl.run_context import RunContext
from terminal_rl.training.job import HardwareConfig


@dataclass(frozen=True)
class ServedJob:
    """An app that runs a policy, as its entry point hands it over (its config read there)."""

    app: str  # for the console and the logs
    work: Callable[[Console], Awaitable[dict]]  # the app's own run, its settings bound
    run: RunContext
    launcher: DictConfig
    hardware: HardwareConfig | None  # the node a Slurm job asks for (None: runs here)
    docker_host: str  # sandbox.docker_host, swept of the run's sandboxes when a Slurm job ends
    serve: DictConfig  # serve.kind none | command, its command, model and ready_timeout_sec
    policy_kind: str
    policy_base_url: str
    verbose: bool


def launch_app(job: ServedJob) -> dict | None:
    """Run the app here, or submit it to Slurm and return at once."""
    if job.launcher.kind == "slurm":
        from terminal_rl.launch.slurm import submit

        submit(job.run, job.hardware, job.launcher, ServedApp(job), nodes=1)
        return None
    return run_app(job)


def run_app(job: ServedJob) -> dict:
    with app_console(job.app, job.run, job.verbose) as console, serve_policy(job, console):
        return asyncio.run(job.work(console))


class ServedApp:
    """The Slurm job body: the app (and its server), then this run's sandboxes swept from the node."""

    def __init__(self, job: ServedJob):
        self.job = job

    def __call__(self) -> dict:
        from terminal_rl.launch.epilog import mark_job_processes
        from terminal_rl.launch.slurm import janitor

        mark_job_processes()
        try:
            return run_app(self.job)
        finally:
            janitor(self.job.docker_host, self.job.run)


@contextlib.contextmanager
def serve_policy(job: ServedJob, console: Console) -> Iterator[None]:
    """With ``serve.kind=command``: start the server, wait until it answers, stop it afterwards."""
    serve = job.serve
    if serve.kind == "none":
        yield
        return
    if job.policy_kind != "token":
        raise ValueError(
            f"a served checkpoint (serve.kind={serve.kind}) is for policy=token, not policy={job.policy_kind}"
        )
    command = [sys.executable if i == 0 and part == "python" else str(part) for i, part in enumerate(serve.command)]
    log_path = job.run.log_dir / "serve.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_ready(job.policy_base_url, server, serve.ready_timeout_sec, log_path)
        console.print(f"serving {serve.model} at {job.policy_base_url} (log: {log_path})")
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
