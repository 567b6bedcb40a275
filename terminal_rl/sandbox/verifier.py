"""Verification: the reward's ground truth, run in the container the agent worked in.

What it does against an agent that tries to game it:
- tests enter the container only now, after the agent has finished, in a folder with an
  unpredictable name created at verify time (through the Docker archive API, no container binary);
- pytest runs in a fresh ``docker exec`` (never the agent's shell: its aliases, variables and rc
  files do not apply), with a clean interpreter: ``python3 -I -S`` (no PYTHON* variables, no user
  site, no current directory on the path, no ``sitecustomize``, and ``.pth`` files contribute only
  plain path entries, never code), the current directory appended *after* the standard library so
  a planted ``pytest.py`` or ``json.py`` cannot shadow anything, ``--noconftest`` (planted
  ``conftest.py`` files are ignored), our own ini file (planted ``pytest.ini``/``tox.ini``/
  ``pyproject.toml`` are not read), plugin autoload off, no cache;
- the result is a JUnit report at a fresh random path, read back through the Docker API, never a
  file the agent could have planted; Harbor's ``/tests`` and ``/logs/verifier`` are recreated first;
- services the agent started keep running (tests check them).

What it does not protect against: a root agent that rewrites the interpreter, pytest itself, or
``timeout``/``bash`` in the image; a process the agent left running that races the verifier and
edits the fresh folder or ``/logs/verifier`` while tests run; editable installs that work only
through ``.pth`` import hooks are invisible to the tests (a consequence of not running ``.pth`` code).
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import tarfile
import time
from dataclasses import asdict, dataclass, field

from docker.errors import NotFound

from terminal_rl.sandbox.output import OutputCapture
from terminal_rl.sandbox.sandbox import Sandbox
from terminal_rl.tasks.model import Task, VerifierKind
from terminal_rl.tasks.pytest_source import effective_weights
from terminal_rl.tasks.weighted_reward import junit_outcomes, weighted_score

# Runs under `python3 -I -S`: site-packages without executing any .pth code, then pytest.
_PYTEST_RUNNER = r"""
import os, site, sys
dirs = list(site.getsitepackages())
venv = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sys.executable))), "pyvenv.cfg")
if os.path.isfile(venv):
    root = os.path.dirname(venv)
    dirs.insert(0, os.path.join(root, "lib", "python%d.%d" % sys.version_info[:2], "site-packages"))
for directory in dirs:
    if not os.path.isdir(directory):
        continue
    sys.path.append(directory)
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".pth"):
            continue
        try:
            lines = open(os.path.join(directory, name), encoding="utf-8", errors="replace").read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                path = os.path.join(directory, line)
                if os.path.isdir(path):
                    sys.path.append(path)
import pytest
sys.path.append(os.getcwd())
sys.exit(pytest.main(sys.argv[1:]))
"""
_PYTEST_INI = "[pytest]\naddopts =\njunit_family = xunit1\n"
_REPORT = "report.xml"
_HARBOR_REWARDS = ("/logs/verifier/reward.txt", "/logs/verifier/reward.json")
_LOG_BYTES = 8192


@dataclass(frozen=True)
class VerificationResult:
    """Structured verifier record: per-test outcomes and weights, the score and why."""

    score: float
    # Test name -> passed|failed|error|skipped ("missing" for weighted tests absent from the report).
    outcomes: dict[str, str]
    weights: dict[str, float]
    duration_sec: float
    # Empty when the verifier ran normally; otherwise why the score is what it is.
    reason: str = ""
    # True when the failure is the environment's (e.g. no pytest in the image), not the agent's.
    infrastructure_error: bool = False
    exit_code: int | None = None
    log: str = field(default="", repr=False)

    def to_dict(self) -> dict:
        return asdict(self)


async def verify(sandbox: Sandbox, task: Task) -> VerificationResult:
    """Run the task's tests in ``sandbox`` and score them (see the module docstring)."""
    if task.verifier is VerifierKind.HARBOR:
        return await _verify_harbor(sandbox, task)
    return await _verify_pytest(sandbox, task)


async def _verify_pytest(sandbox: Sandbox, task: Task) -> VerificationResult:
    started = time.monotonic()
    weights = effective_weights(task)
    folder = f"/tmp/.verify-{secrets.token_hex(16)}"
    files = {name: source.encode() for name, source in task.tests.items() if name.endswith(".py")}
    files["pytest.ini"] = _PYTEST_INI.encode()
    await _put_folder(sandbox, folder, files)
    test_files = [f"{folder}/{name}" for name in sorted(files) if name.endswith(".py")]
    command = ["timeout", "-s", "KILL", str(int(task.limits.verifier_timeout_sec)), "python3", "-I", "-S", "-c",
               _PYTEST_RUNNER, *test_files, "-c", f"{folder}/pytest.ini", "--rootdir", folder, "--noconftest",
               "-p", "no:cacheprovider", "-q", "-rA", f"--junitxml={folder}/{_REPORT}"]
    exit_code, log, timed_out = await _exec(sandbox, command, task.limits.verifier_timeout_sec)
    duration = time.monotonic() - started
    report = await _read_file(sandbox, f"{folder}/{_REPORT}")
    if timed_out:
        return VerificationResult(0.0, {}, weights, duration, "verifier timeout", False, exit_code, log)
    if report is None:
        missing_pytest = "No module named pytest" in log or exit_code == 127
        reason = "pytest is not installed in the image" if missing_pytest else f"no pytest report (exit {exit_code})"
        return VerificationResult(0.0, {}, weights, duration, reason, missing_pytest, exit_code, log)
    outcomes = junit_outcomes(report.decode("utf-8", errors="replace"))
    reason = ""
    if exit_code in (2, 3, 4):
        reason = f"collection error (pytest exit {exit_code})"
    elif exit_code == 5:
        reason = "no tests collected"
    scored = {name: outcomes.get(name, "missing") for name in weights} | outcomes
    score = 0.0 if reason else weighted_score(outcomes, weights)
    return VerificationResult(score, scored, weights, duration, reason, False, exit_code, log)


async def _verify_harbor(sandbox: Sandbox, task: Task) -> VerificationResult:
    started = time.monotonic()
    cleared = await sandbox.control.run("rm -rf /tests /logs/verifier", timeout=60, inline=True)
    if cleared.exit_code != 0:
        return VerificationResult(0.0, {}, {}, time.monotonic() - started,
                                  f"could not clear /tests and /logs/verifier: {cleared.output.strip()}", True)
    await _put_folder(sandbox, "/tests", {name: source.encode() for name, source in task.tests.items()}, 0o755)
    await _put_folder(sandbox, "/logs", {"verifier/.keep": b""}, 0o755)
    command = ["timeout", "-s", "KILL", str(int(task.limits.verifier_timeout_sec)), "bash", "/tests/test.sh"]
    exit_code, log, timed_out = await _exec(sandbox, command, task.limits.verifier_timeout_sec)
    duration = time.monotonic() - started
    if timed_out:
        return VerificationResult(0.0, {}, {}, duration, "verifier timeout", False, exit_code, log)
    for path in _HARBOR_REWARDS:
        data = await _read_file(sandbox, path)
        if data is not None:
            try:
                value = json.loads(data)
                reward = float(value["reward"] if isinstance(value, dict) else value)
            except (ValueError, KeyError, TypeError):
                return VerificationResult(0.0, {}, {}, duration, f"unreadable reward in {path}: {data[:80]!r}",
                                          False, exit_code, log)
            return VerificationResult(min(1.0, max(0.0, reward)), {}, {}, duration, "", False, exit_code, log)
    return VerificationResult(0.0, {}, {}, duration, f"test.sh wrote no reward (exit {exit_code})", False,
                              exit_code, log)


async def _put_folder(sandbox: Sandbox, folder: str, files: dict[str, bytes], mode: int = 0o700) -> None:
    """Create ``folder`` with ``files`` in one archive. Its parent must exist and is left untouched."""
    parent, name = folder.rstrip("/").rsplit("/", 1)
    now = int(time.time())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, now
        archive.addfile(info)
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size, info.mode, info.mtime = len(data), 0o755 if path.endswith(".sh") else 0o644, now
            archive.addfile(info, io.BytesIO(data))
    await sandbox.docker.call(sandbox.docker.api.put_archive, sandbox.container_id, parent or "/", buffer.getvalue())


async def _exec(sandbox: Sandbox, command: list[str], timeout: float) -> tuple[int | None, str, bool]:
    """Run ``command`` in a fresh exec with the container's own environment; (exit code, log, timed out)."""
    api = sandbox.docker.api
    exec_id = (await sandbox.docker.call(
        api.exec_create, sandbox.container_id, command, workdir=sandbox.workdir,
        environment={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"},
    ))["Id"]
    capture = OutputCapture(_LOG_BYTES, _LOG_BYTES)
    started = time.monotonic()
    try:
        output = await asyncio.wait_for(sandbox.docker.call(api.exec_start, exec_id), timeout + 30)
    except TimeoutError:
        return None, capture.text(), True
    capture.write(output)
    exit_code = (await sandbox.docker.call(api.exec_inspect, exec_id))["ExitCode"]
    # `timeout -s KILL` ends the verifier with 137 once the budget is spent.
    return exit_code, capture.text(), exit_code == 137 and time.monotonic() - started >= timeout - 1


async def _read_file(sandbox: Sandbox, path: str) -> bytes | None:
    try:
        stream, _ = await sandbox.docker.call(sandbox.docker.api.get_archive, sandbox.container_id, path)
    except NotFound:
        return None
    data = await sandbox.docker.call(lambda: b"".join(stream))
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        member = archive.next()
        if member is None or not member.isfile():
            return None
        extracted = archive.extractfile(member)
        return extracted.read() if extracted else None
