"""Which base images a task set builds FROM and, for each missing one, how it gets here: a recipe
(``python -m terminal_rl.sandbox command=bootstrap`` provides it) or the fix to apply. Printed, and
added to a task set's prepare report (``python -m terminal_rl.tasks``)."""

from __future__ import annotations

import json
from pathlib import Path

from docker.errors import DockerException
from rich.console import Console

from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_images import plan
from terminal_rl.sandbox.runtime.docker_client import docker_client


def report_base_images(sandbox: SandboxConfig, references: list[str], report_file: Path, console: Console) -> None:
    """Report on ``references`` (the task set's FROM lines) on the console and in ``report_file``
    (a JSON object, its ``base_images`` key); without a container engine, say so and report nothing."""
    try:
        needs = plan(docker_client(sandbox.docker_host), sandbox.base_images, references)
    except DockerException as error:
        console.print(f"base images: {len(references)} named; not checked, no container engine answers ({error})")
        return
    console.print(
        f"base images: {len(references)} named, {len(needs.provide)} missing with a recipe "
        f"(`python -m terminal_rl.sandbox command=bootstrap` provides them), {len(needs.unmatched)} with none"
    )
    for fix in needs.unmatched.values():
        console.print(f"[yellow]missing:[/yellow] {fix}")
    report = json.loads(report_file.read_text(encoding="utf-8"))
    report["base_images"] = {
        "named": references,
        "missing_with_recipe": needs.provide,
        "missing_no_recipe": needs.unmatched,
    }
    report_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
