"""What a generated task must pass in our own sandbox, through our own image builder and verifier.

Each check returns the problem as feedback for the generator LLM ("" when it passed): the build log's
tail, the tests that failed and their output. A sandbox or verifier that fails for the environment's
own reasons raises instead (:class:`InfrastructureError`): the candidate is not the one to blame and
stays where it is for a rerun.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from terminal_rl.sandbox.images.images import ImageBuildError
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.attacks import attack_commands
from terminal_rl.sandbox.verify.verifier import VERIFIER_UID, VerificationResult, verify
from terminal_rl.tasks.dockerfile import base_images
from terminal_rl.tasks.model import Task
from terminal_rl.tasks.pytest_source import collect_test_names, effective_weights
from terminal_rl.tasks.validation import validate_tasks

LOG_TAIL_CHARS = 3000


class InfrastructureError(RuntimeError):
    """The sandbox or verifier failed for reasons of its own, not of the generated task."""


@dataclass(frozen=True)
class CheckResult:
    problem: str
    build_sec: float = 0.0
    test_sec: float = 0.0


def dockerfile_problem(dockerfile: str, allowed: list[str]) -> str:
    """Why the Dockerfile may not be built here ("" when it may): it must build FROM allowed images."""
    bases = base_images(dockerfile)
    if not bases or any(base not in allowed for base in bases):
        return f"The Dockerfile must build FROM one of {allowed} (it names {bases or 'none'})."
    return ""


async def check_environment(factory: SandboxFactory, task: Task, allowed: list[str]) -> CheckResult:
    """The image builds and the initial-state tests (``task.tests``) all pass in a fresh container."""
    problem = dockerfile_problem(task.environment.dockerfile, allowed) or _tests_problem(task)
    if problem:
        return CheckResult(problem)
    started = time.monotonic()
    try:
        await factory.images.ensure(task)
    except ImageBuildError as error:
        return CheckResult(
            f"The Dockerfile did not build: {error.reason}\n{error.log_tail[-LOG_TAIL_CHARS:]}",
            time.monotonic() - started,
        )
    build_sec = time.monotonic() - started
    result = await _verified(factory, task)
    failed = sorted(name for name, outcome in result.outcomes.items() if outcome != "passed")
    problem = (
        ""
        if result.score == 1.0 and not failed
        else (
            f"The initial-state tests did not all pass in a fresh container: {failed}\n{result.log[-LOG_TAIL_CHARS:]}"
        )
    )
    return CheckResult(problem, build_sec, result.duration_sec)


async def check_completion(factory: SandboxFactory, task: Task) -> CheckResult:
    """Every completion test fails in the initial state and all pass after the reference solution."""
    problems = validate_tasks([task]).problems
    if problems:
        return CheckResult("The tests or weights are invalid: " + "; ".join(p.message for p in problems))
    untouched = await _verified(factory, task)
    passing = sorted(name for name, outcome in untouched.outcomes.items() if outcome == "passed")
    if passing:
        return CheckResult(
            f"These tests already pass in the initial state, before any work: {passing}. Every test "
            "must fail until the task is done.",
            test_sec=untouched.duration_sec,
        )
    solved, output = await _verified_after(factory, task, task.solution)
    failed = sorted(name for name, outcome in solved.outcomes.items() if outcome != "passed")
    if failed or solved.score < 1.0:
        return CheckResult(
            f"After the reference solution ran these tests did not pass: {failed}\nSolution output:\n"
            f"{output[-LOG_TAIL_CHARS // 2 :]}\nTest output:\n{solved.log[-LOG_TAIL_CHARS:]}",
            test_sec=untouched.duration_sec + solved.duration_sec,
        )
    return CheckResult("", test_sec=untouched.duration_sec + solved.duration_sec)


async def acceptance_gates(factory: SandboxFactory, task: Task, fresh: int) -> dict:
    """The reference solution passes in ``fresh`` fresh containers, a no-op fails in as many, and no
    attack on the verifier scores more than the no-op."""
    attacks = attack_commands(sorted(effective_weights(task)), VERIFIER_UID)
    runs = [_verified_after(factory, task, task.solution) for _ in range(fresh)]
    runs += [_verified_after(factory, task, None) for _ in range(fresh)]
    runs += [_verified_after(factory, task, "\n".join(commands)) for commands in attacks.values()]
    scores = [result.score for result, _ in await asyncio.gather(*runs)]
    oracle, noop, attacked = scores[:fresh], scores[fresh : 2 * fresh], dict(zip(attacks, scores[2 * fresh :]))
    problems = (
        ([f"the reference solution scored {oracle}"] if min(oracle) < 1.0 else [])
        + ([f"a no-op scored {noop}"] if max(noop) >= 1.0 else [])
        + [
            f"attack {name} scored {score} above a no-op's {max(noop)}"
            for name, score in attacked.items()
            if score > max(noop)
        ]
    )
    return {"oracle": oracle, "noop": noop, "attacks": attacked, "problem": "; ".join(problems)}


def _tests_problem(task: Task) -> str:
    names, errors = collect_test_names(task.tests)
    if errors:
        return f"The tests do not parse: {errors}"
    return "" if names else "The tests file has no test functions."


async def _verified(factory: SandboxFactory, task: Task) -> VerificationResult:
    return (await _verified_after(factory, task, None))[0]


async def _verified_after(factory: SandboxFactory, task: Task, commands: str | None) -> tuple[VerificationResult, str]:
    """The verification of ``task`` in a fresh container after ``commands`` (None: untouched), and
    their output."""
    async with factory.task_sandbox(task) as sandbox:
        output = ""
        if commands:
            output = (await sandbox.run(commands, timeout=task.limits.agent_timeout_sec)).output
        result = await verify(sandbox, task)
    if result.infrastructure_error:
        raise InfrastructureError(f"verifying {task.id}: {result.reason}")
    return result, output
