"""Procedural families against the real sandbox and verifier: in a sample of every family at every
level, each test fails on the initial state, all pass after the solution, a family's plausible mistake
fails them, and the tasks share one image."""

import asyncio
from collections import Counter

import pytest

from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.families import FAMILIES
from terminal_rl.tasks.procedural import procedural_tasks
from terminal_rl.tasks.validation import validate_tasks
from tests.support import SMALL_LIMITS

LEVELS = ["easy", "medium", "hard"]


def test_families_are_deterministic_per_seed_and_fresh_across_seeds():
    for family in FAMILIES:
        first, again = (procedural_tasks(family, 6, 3, LEVELS, SMALL_LIMITS) for _ in range(2))
        other = procedural_tasks(family, 6, 4, LEVELS, SMALL_LIMITS)
        assert [t.content_hash for t in first] == [t.content_hash for t in again]
        assert {t.content_hash for t in first}.isdisjoint(t.content_hash for t in other), family
        assert [t.difficulty.value for t in first] == LEVELS * 2
        assert validate_tasks(first).problems == [], family
    slow = procedural_tasks("slow_check", 3, 0, LEVELS, SMALL_LIMITS)
    assert all(t.prompt.startswith("Write the ") and "time.sleep(" in next(iter(t.tests.values())) for t in slow), (
        "write_value's tasks, their check slowed"
    )
    with pytest.raises(ValueError, match="family='nope' is not one of"):
        procedural_tasks("nope", 1, 0, LEVELS, SMALL_LIMITS)
    with pytest.raises(ValueError, match="levels=.*must be a non-empty list"):
        procedural_tasks("write_value", 1, 0, ["trivial"], SMALL_LIMITS)


@pytest.mark.docker
def test_every_family_fails_untouched_and_mistaken_and_passes_with_its_solution(sandbox_config, run_context):
    # slow_check is write_value's tasks with a wait before the check (seconds each): left out here.
    played = [family for family in FAMILIES if family != "slow_check"]
    sample = [task for family in played for task in procedural_tasks(family, 3, 0, LEVELS, SMALL_LIMITS)]

    async def check(factory, task):
        async with factory.task_sandbox(task) as sandbox:
            untouched = await verify(sandbox, task)
            run = await sandbox.run(task.solution, timeout=60)
            solved = run.exit_code, await verify(sandbox, task)
        mistaken = None
        if "mistake" in task.metadata:
            async with factory.task_sandbox(task) as sandbox:
                await sandbox.run(task.metadata["mistake"], timeout=60)
                mistaken = await verify(sandbox, task)
        if task.id.startswith("inbox_value") and task.difficulty.value == "hard":
            async with factory.task_sandbox(task) as sandbox:  # the failed write's path made a folder
                await sandbox.run(f"{task.metadata['mistake']}mkdir -p /app/out/answer.txt\n", timeout=60)
                blocked = await verify(sandbox, task)
            assert blocked.score == 0, ("a folder that blocks the file earns no folder credit", blocked.outcomes)
        return untouched, *solved, mistaken

    async def main():
        async with SandboxFactory(sandbox_config, run_context) as factory:
            images = {(await factory.images.ensure(task)).image for task in sample}
            slots = asyncio.Semaphore(4)

            async def one(task):
                async with slots:
                    return await check(factory, task)

            return images, await asyncio.gather(*(one(task) for task in sample))

    images, results = asyncio.run(main())
    assert len(images) == 1, "every family's tasks share one image"
    for task, (untouched, exit_code, solved, mistaken) in zip(sample, results):
        assert untouched.score < 1 and not untouched.infrastructure_error, task.id
        assert set(untouched.outcomes.values()) <= {"failed", "error"}, (task.id, untouched.outcomes)
        assert solved.score == 1.0, (task.id, exit_code, solved.outcomes, solved.log[-1500:])
        if mistaken is not None:
            assert mistaken.score < 1 and not mistaken.infrastructure_error, (task.id, mistaken.outcomes)
    assert sum(r[3] is not None for r in results) >= 3, "write_value's mistakes were played"


def test_inbox_value_takes_dependent_turns_and_hides_the_folder_step_on_hard():
    """The inbox file's name and word are only in its files (a listing, then a read, finds them); the
    folder to make is asked for on medium, unsaid on hard. Medium's mistake, where the folder is made
    before the read, files the inbox file's name (no write fails in it); hard's is easy's commands,
    whose write fails."""
    tasks = {t.difficulty.value: t for t in procedural_tasks("inbox_value", 3, 0, LEVELS, SMALL_LIMITS)}
    for level, task in tasks.items():
        [(inbox_file, word)] = [(path, text.decode().strip()) for path, text in task.files.items() if "/inbox/" in path]
        assert inbox_file.rsplit("/", 1)[1] not in task.prompt and word not in task.prompt, level
        found = [c for c in task.solution.splitlines() if not c.startswith("mkdir ") and c != "ls /app/out/answer.txt"]
        assert found[:2] == ["ls /app/inbox", f"cat {inbox_file}"] and found[2].startswith(f"echo {word} > ")
        assert len(found) == 3 and abs(sum(task.test_weights.values()) - 1) < 1e-9
    assert "/app/out/.keep" in tasks["easy"].files and "mistake" not in tasks["easy"].metadata
    assert "create it first" in tasks["medium"].prompt and "create" not in tasks["hard"].prompt
    for level in ("medium", "hard"):
        assert "mkdir -p /app/out" in tasks[level].solution
        assert not any(path.startswith("/app/out/") for path in tasks[level].files)
    for task in procedural_tasks("inbox_value", 60, 0, ["medium"], SMALL_LIMITS):
        solution = task.solution.splitlines()
        if solution.index("mkdir -p /app/out") >= 2:  # after the read: the write follows mkdir, as on hard
            assert "mistake" not in task.metadata, solution
            continue
        mistake = task.metadata["mistake"].splitlines()
        [stem] = [path.rsplit("/", 1)[1].removesuffix(".txt") for path in task.files if "/inbox/" in path]
        assert mistake[:-1] == solution[:-1] and mistake[-1].startswith(f"echo {stem} > ")
    assert tasks["hard"].metadata["mistake"].splitlines() == [
        line for line in tasks["hard"].solution.splitlines() if not line.startswith("mkdir")
    ]


def test_inbox_value_medium_makes_the_folder_at_each_of_the_first_four_turns():
    """So a warm start that keys its commands on the turn has seen ``mkdir`` at every turn up to the
    one after hard's failed write (the fourth), always before the write; at the fourth (an eighth of
    tasks), after a look at the target file that fails (``ls /app/out/answer.txt``). The target is one
    file, named in no parameter."""
    medium = [t.solution.splitlines() for t in procedural_tasks("inbox_value", 240, 0, ["medium"], SMALL_LIMITS)]
    turns = Counter(commands.index("mkdir -p /app/out") for commands in medium)
    assert set(turns) == {0, 1, 2, 3} and min(turns[t] for t in (0, 1, 2)) >= 50, turns
    assert 15 <= turns[3] <= 45, turns  # an eighth of 240 is 30
    for commands in medium:
        at = commands.index("mkdir -p /app/out")
        assert commands[at + 1 :][-1].startswith("echo ") and (at == 3) == ("ls /app/out/answer.txt" in commands)
        assert at != 3 or commands[2] == "ls /app/out/answer.txt"
        assert commands[-1].endswith(" > /app/out/answer.txt")
