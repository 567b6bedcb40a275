"""Verification: the reward's ground truth, one path for every task format, hardened against the agent.

Threat model. The agent is root in its container with the sandbox's capabilities (no ``SYS_ADMIN``,
no ``SYS_PTRACE``), shares the PID namespace the verifier runs in, may leave processes running, and
may rewrite any file of the image, including interpreters, pytest, shells and whatever it can reach
in ``/proc``.

What runs the tests. A verifier container started from the task's own image (its root is the image
as built: no agent ever ran in it), with the trusted toolchain (``toolchain.py``: Python 3.11 with
pytest, bash, coreutils and friends, self-contained) mounted read-only at ``/terminal_rl``, joins the
sandbox's PID and network namespaces, so services the agent started keep running and stay reachable
and its processes are visible. Its runner (``verifier_runner.py``, on the toolchain's Python) makes
itself non-dumpable and fails the verification if any other process got hold of its stdio, memory
or root first; it then takes the job and builds the tests' root in a private copy of the sandbox's
mount namespace (no agent process can see, prepare or rewrite any of it):

* the agent's files where the agent left them (what the tests inspect), each top-level entry bound
  into a root of ours, so the agent cannot unmount anything by removing or renaming its directories;
* fresh tmpfs on ``/tests`` (the task's tests are written there) and ``/logs/verifier``;
* the pristine image at ``/terminal_rl/image`` (an overlay whose writable layer is private and
  discarded, so a test.sh may install into it) and its runtime in front of the agent's: on ``PATH``
  first a shim of every program of the image's ``PATH`` directories (the pristine file, or a script
  copy whose ``#!`` names the pristine interpreter), then the toolchain (for commands the image
  lacks), the agent's directories last; on ``LD_LIBRARY_PATH`` the image's library directories,
  then those the agent's ``ld.so.conf`` adds (for its own programs); every dynamic loader the image's
  programs name, at that path, patched to read neither ``/etc/ld.so.preload`` and
  ``/etc/ld.so.cache`` nor the agent's default library directories (the image's instead); the
  image's ``/bin/sh`` and ``/bin/bash`` (else the toolchain's bash), ``/etc/nsswitch.conf`` (no
  name-service module of the agent's) and ``/etc/alternatives``; ``OPENSSL_CONF``, the CA bundle
  and ``GCONV_PATH`` at the image's files; no pip, git or curl configuration of the agent's;

and runs, as it would run on the image the task author built:

* Terminal-Bench-RL / Terminal-Bench 1 tasks: ``python3 -m pytest`` over the tests (weighted): the
  image's Python with its own standard library and packages (compiled ones included), or the
  toolchain's for an image without Python;
* Harbor tasks: ``tests/test.sh`` unchanged, by ``bash --noprofile --norc``, its commands found the
  same way,

as a uid that is not the agent's, with the sandbox's capabilities (tests read what root can) plus one
the agent lacks (so no agent process can reach a verifier process's ``/proc/<pid>/root``, fds or
memory), no new privileges, a clean environment: ``PYTEST_ADDOPTS`` pinning the root dir and the
conftest cut-off to ``/tests`` (the task's own conftest works; planted ones above it do not), plugin
autoload off, no cache, a private JUnit report per pytest run, no user site, and our
sitecustomize (``toolchain_site.py``: a module of the pristine image or the toolchain, such as numpy,
pytest or ``json``, always comes from there, whatever is planted in the working directory; packages
the agent installed come after them, ignoring ``.pth`` code). The result comes back over the
verifier's own stdout, tagged with a fresh nonce; the reward comes only from what the tests wrote in
the private ``/logs/verifier`` (a planted or pre-existing one is ignored).

Trusted: the kernel, the engine, the toolchain, the image as built. Still not protected: a kernel
exploit (containers share the host kernel). Code the tests execute on purpose from the agent's files
(its programs and scripts, a module or a command only the agent installed, a library only its
``ld.so.conf`` adds) runs with the tests' rights and could write a report or reward file itself; for
weighted tasks only the report of the pytest the verifier started counts and the tests' leftover
processes are killed before results are read, but a Harbor test.sh's reward file is whatever its
commands wrote. Likewise: a program named by an absolute path other than the loaders and the pinned
paths (``/usr/bin/python3`` in a test is the agent's file); a program started with an environment
that drops ``LD_LIBRARY_PATH`` (it finds a library the image lacks in the agent's directories, and
the agent's ``ld.so.conf`` no longer applies); what the image's libraries and tools read from
absolute paths of the agent's tree that the list above does not cover (``/etc/hosts``, files in
``/root``, an iconv module configured only in the agent's gconv directory, Debian's
``/etc/python3.X`` configuration for ``python -I``, an absolute symlink of the image into ``/etc``,
other interpreters' compiled-in library and configuration paths such as Perl's ``/etc/perl``,
Ruby's library or ``php.ini``, apt's configuration, and the image's environment variables that name
absolute paths, e.g. ``RUSTUP_HOME`` or ``JAVA_HOME``, which are the agent's files); a repository's
own git configuration; a script shim is a copy, so a script that finds its siblings relative to its
own path (npm, mvn) does not find them; a leftover process of the tests that leaves the tests' uid
or turns non-dumpable escapes the kill before the results are read; an image whose Python is older
than 3.7 and has no pytest of its own (the toolchain's needs 3.7: its tests fail to run). A task
whose intended fix is changing the image's own interpreter or packages is judged with the pristine
ones. An agent that changes its files while the tests run (the tests test the state they see). An
agent that stops or kills the verifier, or breaks the tools the start files are read with, scores
0, the same as failing (a killed verifier is not counted as the environment's failure); an agent
that removes its own sandbox (killing its lease watcher) ends the episode as a sandbox error. The
verifier container itself holds ``SYS_ADMIN`` and runs without AppArmor confinement (to enter and
remount namespaces); only our runner uses those: what the tests execute has the sandbox's
capabilities.
"""

from __future__ import annotations

import json
import secrets
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field, replace

from terminal_rl.sandbox.runtime.output import sanitize
from terminal_rl.sandbox.runtime.sandbox import Sandbox
from terminal_rl.sandbox.verify.toolchain import BIN_DIRS
from terminal_rl.tasks.model import Task, VerifierKind
from terminal_rl.tasks.pytest_source import effective_weights
from terminal_rl.tasks.weighted_reward import junit_outcomes, weighted_score

# The tests' uid: not the agent's root. The agent could still take it (it has CAP_SETUID), so the
# tests also hold a capability the agent's processes lack: the kernel lets a process inspect another
# (/proc/<pid>/root, fd, mem) only if its permitted capabilities include the other's, or with
# CAP_SYS_PTRACE (security/commoncap.c, cap_ptrace_access_check). WAKE_ALARM grants nothing else.
VERIFIER_UID = 10999
GUARD_CAPABILITY = "WAKE_ALARM"
JUNIT_DIR = "/logs/verifier/.terminal_rl_junit"
HARBOR_REWARDS = ("reward.txt", "reward.json")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_INI_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
# Variables of the image's environment that could steer an interpreter, a shell or pytest.
_UNSAFE_ENV = ("PYTHON", "LD_", "BASH_ENV", "ENV", "PYTEST", "PATH", "PS4", "SHELLOPTS", "BASHOPTS")


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
    # True when the failure is the environment's (e.g. the verifier could not start), not the agent's.
    infrastructure_error: bool = False
    exit_code: int | None = None
    log: str = field(default="", repr=False)
    # Harbor tasks: the task's own reward (its test.sh's reward file), beside the per-test outcomes.
    task_reward: float | None = None
    # Facts for the forged-fixture filter (terminal_rl/datasets/forged.py): the container's changes
    # against its image when the tests began (path -> added|modified|deleted, the engine's diff), the
    # start files whose content the agent changed, and the files the tests read.
    changes: dict[str, str] = field(default_factory=dict)
    start_files_changed: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def verification_job(task: Task, image_env: list[str], workdir: str, capabilities: list[str]) -> dict:
    """What the verifier runner does for ``task`` (pure): the files for ``/tests``, the command, its
    environment and limits, and a fresh nonce that tags the result."""
    files = (
        dict(task.tests)
        if task.verifier is VerifierKind.HARBOR
        else {name: source for name, source in task.tests.items() if name.endswith(".py")}
    )
    if not any(name in files for name in _INI_FILES):
        files["pytest.ini"] = "[pytest]\naddopts =\njunit_family = xunit1\n"
    # Command names: the runner finds them on its PATH (the pristine image's programs, else the toolchain's).
    if task.verifier is VerifierKind.HARBOR:
        command = ["bash", "--noprofile", "--norc", "/tests/test.sh"]
    else:
        command = ["python3", "-m", "pytest", *[f"/tests/{n}" for n in sorted(files) if n.endswith(".py")], "-q", "-rA"]
    image = dict(entry.split("=", 1) for entry in image_env if "=" in entry)
    path = image.get("PATH", DEFAULT_PATH).split(":")
    environment = {name: value for name, value in image.items() if not name.startswith(_UNSAFE_ENV)} | {
        "HOME": "/root",
        "USER": "root",
        "LOGNAME": "root",
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "TERMINAL_RL_JUNIT_DIR": JUNIT_DIR,
        "PYTEST_ADDOPTS": f"--rootdir=/tests --confcutdir=/tests -p no:cacheprovider -o junit_family=xunit1 "
        f"--junitxml={JUNIT_DIR}/run.xml",
    }
    return {
        "files": files,
        "command": command,
        "environment": environment,
        "workdir": workdir,
        "search_path": {
            "image": _paths(path),
            "toolchain": list(BIN_DIRS),
            # The image's own settings: its library directories are taken from the
            # pristine image, its Python path (e.g. /app/src) is the agent's files.
            "libraries": _paths(image.get("LD_LIBRARY_PATH", "").split(":")),
            "python": _paths(image.get("PYTHONPATH", "").split(":")),
        },
        "timeout_sec": float(task.limits.verifier_timeout_sec),
        "uid": VERIFIER_UID,
        "capabilities": sorted({*capabilities, GUARD_CAPABILITY}),
        "nonce": secrets.token_hex(16),
    }


def _paths(entries: list[str]) -> list[str]:
    return [entry for entry in entries if entry.startswith("/")]


def score(task: Task, job: dict, raw: dict | None, problem: str, duration_sec: float) -> VerificationResult:
    """The verification record from what the runner returned (pure). ``problem``: why there is no
    result (``raw`` None); ``infrastructure`` problems start with "infrastructure:"."""
    weights = effective_weights(task) if task.verifier is not VerifierKind.HARBOR or task.test_weights else {}
    if raw is None:
        infrastructure = problem.startswith("infrastructure:")
        return VerificationResult(
            0.0, {}, weights, duration_sec, problem.removeprefix("infrastructure: "), infrastructure
        )
    if "error" in raw:
        return VerificationResult(0.0, {}, weights, duration_sec, f"the verifier could not run: {raw['error']}", True)
    if "stopped" in raw:  # its worker was killed: the agent (root beside it) can, so it is not infrastructure
        return VerificationResult(0.0, {}, weights, duration_sec, raw["stopped"], False)
    log, exit_code = sanitize(raw["output"].encode()), raw["exit_code"]
    if raw["timed_out"]:
        return VerificationResult(0.0, {}, weights, duration_sec, "verifier timeout", False, exit_code, log)
    # Weighted tasks: only the report of the pytest the verifier started (a file another process of
    # the tests wrote in the report folder is not it); Harbor: every pytest its test.sh ran.
    only = (
        None
        if task.verifier is VerifierKind.HARBOR
        else f"{JUNIT_DIR.removeprefix('/logs/verifier/')}/{raw['pid']}.xml"
    )
    outcomes = merged_outcomes(raw["files"], only)
    reward = task_reward(raw["files"])
    scored = {name: outcomes.get(name, "missing") for name in weights} | outcomes
    if task.verifier is VerifierKind.HARBOR:
        # Partial credit from the per-test outcomes (the task's weights, else equal), else its reward.
        per_test = weights or {name: 1 / len(outcomes) for name in outcomes}
        if outcomes:
            return VerificationResult(
                weighted_score(outcomes, per_test), scored, per_test, duration_sec, "", False, exit_code, log, reward
            )
        if reward is None:
            return VerificationResult(
                0.0, scored, weights, duration_sec, f"test.sh wrote no reward (exit {exit_code})", False, exit_code, log
            )
        return VerificationResult(reward, scored, weights, duration_sec, "", False, exit_code, log, reward)
    if not outcomes:
        missing_pytest = "No module named pytest" in log
        reason = "pytest is not installed" if missing_pytest else f"no pytest report (exit {exit_code})"
        return VerificationResult(0.0, {}, weights, duration_sec, reason, missing_pytest, exit_code, log)
    reason = {
        2: "collection error (pytest exit 2)",
        3: "collection error (pytest exit 3)",
        4: "collection error (pytest exit 4)",
        5: "no tests collected",
    }.get(exit_code, "")
    return VerificationResult(
        0.0 if reason else weighted_score(outcomes, weights),
        scored,
        weights,
        duration_sec,
        reason,
        False,
        exit_code,
        log,
    )


def changed_files(verification: dict) -> set[str]:
    """What an episode changed, from its verification record (``VerificationResult.to_dict()``): the
    paths of the container's diff and the start files it rewrote."""
    return set(verification.get("changes", {})) | set(verification.get("start_files_changed", []))


def merged_outcomes(files: dict[str, str], only: str | None = None) -> dict[str, str]:
    """Per-test outcomes over every JUnit report in ``/logs/verifier`` (a test.sh may run pytest
    several times, with reports of its own), or only the report named ``only``; a test counts as
    passed only if it passed in every report that has it."""
    merged: dict[str, str] = {}
    names = [only] if only else sorted(n for n in files if n.endswith(".xml"))
    for name in (n for n in names if n in files):
        try:
            report = junit_outcomes(files[name])
        except ElementTree.ParseError:  # a run killed while writing its report, or not a report
            continue
        for test, outcome in report.items():
            merged[test] = outcome if merged.get(test, "passed") == "passed" else merged[test]
    return merged


def task_reward(files: dict[str, str]) -> float | None:
    """A Harbor test.sh's reward (``reward.txt``: a number; ``reward.json``: a number or {"reward": x}),
    clipped to [0, 1]; None if it wrote none or an unreadable one."""
    for name in HARBOR_REWARDS:
        if name in files:
            try:
                value = json.loads(files[name])
                return min(1.0, max(0.0, float(value["reward"] if isinstance(value, dict) else value)))
            except (ValueError, KeyError, TypeError):
                return None
    return None


def tests_read(files: dict[str, str]) -> list[str]:
    """The files the tests' Python processes opened for reading (their ``reads-<pid>.txt`` lists)."""
    prefix = f"{JUNIT_DIR.removeprefix('/logs/verifier/')}/reads-"
    return sorted(
        {line for name, text in files.items() if name.startswith(prefix) for line in text.splitlines() if line}
    )


async def _unchanged(sandbox: Sandbox, path: str, data: bytes) -> bool:
    """Whether a start file still holds what it started with. Read through the agent's container,
    whose tools the agent may have broken: a read that fails counts as changed (never as the
    environment's failure, which would mask the episode's group)."""
    try:
        return await sandbox.files.read_bytes_or_none(path) == data
    except Exception:  # noqa: BLE001 - whatever the agent's tools did
        return False


async def verify(sandbox: Sandbox, task: Task) -> VerificationResult:
    """Run the task's tests in ``sandbox`` through the trusted verifier and score them, with the
    container's changes as the tests found it."""
    started = time.monotonic()
    changed_start_files = [
        sandbox.files.resolve(path)
        for path, data in sorted(task.files.items())
        if not await _unchanged(sandbox, path, data)
    ]
    # Start files are written after the container starts, so the diff lists them all as added: only
    # the ones the episode changed are its changes.
    untouched = {sandbox.files.resolve(path) for path in task.files} - set(changed_start_files)
    changes = {path: kind for path, kind in (await sandbox.changes()).items() if path not in untouched}
    job = verification_job(task, sandbox.image_env, sandbox.workdir, sandbox.capabilities)
    raw, problem = await sandbox.run_verifier(job, task.limits)
    result = score(task, job, raw, problem, time.monotonic() - started)
    return replace(
        result,
        changes=changes,
        start_files_changed=changed_start_files,
        reads=tests_read(raw["files"]) if raw and "files" in raw else [],
    )
