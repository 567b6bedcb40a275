"""Long-horizon file processing: sum one amount from each of many verbose ledger parts.

Each part (``/app/ledger/part_NN.txt``) is a page of log lines with one ``amount: N`` line among
them, and the instruction asks for the parts to be read one at a time (no globbing, no scripts), so an
episode takes one turn per part and every turn's observation is a full page. At the context budgets
of the benchmark (``benchmarks/context_management.py``) the pages of a medium or hard task do not all
fit: the agent must keep its running total through elided observations or a summary, as a
Terminal-Bench 2 agent must keep its findings over hundreds of turns.
"""

from __future__ import annotations

import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.model import Difficulty

NAME = "ledger_sum"
CATEGORY = "file-operations"
PARTS = {Difficulty.EASY: 6, Difficulty.MEDIUM: 16, Difficulty.HARD: 30}
LINES_PER_PART = 30
EVENTS = ("sync", "audit", "retry", "flush", "checkpoint", "heartbeat", "rotate", "lookup")


def part_path(number: int) -> str:
    return f"/app/ledger/part_{number:02d}.txt"


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    parts, files, total = PARTS[level], {}, 0
    for number in range(1, parts + 1):
        amount = rng.randint(10, 999)
        total += amount
        lines = [
            f"{number:02d}:{line:03d} worker-{rng.randint(1, 9)} {rng.choice(EVENTS)} "
            f"id={rng.randint(10000, 99999)} latency={rng.randint(1, 900)}ms ok"
            for line in range(LINES_PER_PART)
        ]
        lines[rng.randrange(LINES_PER_PART)] = f"{number:02d}:amount: {amount}"
        files[part_path(number)] = "\n".join(lines) + "\n"
    return FamilyTask(
        f"Sum the amounts of {parts} ledger parts",
        f"The ledger in /app/ledger has {parts} parts, part_01.txt to part_{parts:02d}.txt. Each part has "
        "exactly one line of the form `NN:amount: N`. Read the parts one at a time, in order, with `cat` "
        "(one part per turn; no loops, globs or scripts over several parts), keep a running total, and "
        "when you have read every part write the sum of all amounts alone to /app/total.txt.",
        files,
        pytest_file(
            read_text_helper(),
            """
            def test_total_file_exists():
                assert os.path.isfile("/app/total.txt")""",
            f"""
            def test_total_is_the_sum():
                assert read("/app/total.txt").strip() == "{total}\"""",
        ),
        {"test_total_file_exists": 0.2, "test_total_is_the_sum": 0.8},
        "grep -h ':amount: ' /app/ledger/part_*.txt | awk '{s += $2} END {print s}' > /app/total.txt\n",
        ("long-horizon", "sum"),
    )
