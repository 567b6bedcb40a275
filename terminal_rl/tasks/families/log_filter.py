"""Text and log processing: count, select and summarise the lines of an application log."""

from __future__ import annotations

import random
from collections import Counter

from terminal_rl.tasks.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.model import Difficulty

NAME = "log_filter"
CATEGORY = "text-processing"
LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
COMPONENTS = ("auth", "db", "cache", "api", "worker", "billing")
LOG = "/app/logs/app.log"


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    lines = [
        (
            f"2024-05-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00",
            rng.choice(LEVELS),
            rng.choice(COMPONENTS),
            f"event {rng.randint(100, 999)}",
        )
        for _ in range(rng.randint(20, 40) * (1 if level is Difficulty.EASY else 2))
    ]
    log = "".join(f"{stamp} {lvl} {component}: {message}\n" for stamp, lvl, component, message in lines)
    files = {LOG: log}
    if level is Difficulty.EASY:
        wanted = rng.choice(LEVELS)
        count = sum(lvl == wanted for _, lvl, _, _ in lines)
        return FamilyTask(
            f"Count {wanted} lines",
            f"Count the lines of {LOG} whose level (the second field) is {wanted} and "
            f"write that number alone to /app/answer.txt.",
            files,
            pytest_file(
                read_text_helper(),
                """
                def test_answer_file_exists():
                    assert os.path.isfile("/app/answer.txt")""",
                f'''
                def test_count_is_correct():
                    assert read("/app/answer.txt").strip() == "{count}"''',
            ),
            {"test_answer_file_exists": 0.2, "test_count_is_correct": 0.8},
            f"grep -c '^[^ ]* {wanted} ' {LOG} > /app/answer.txt\n",
            ("count",),
        )
    if level is Difficulty.MEDIUM:
        component = rng.choice(sorted({comp for _, lvl, comp, _ in lines if lvl == "ERROR"} or {lines[0][2]}))
        if not any(lvl == "ERROR" and comp == component for _, lvl, comp, _ in lines):
            lines[0] = (lines[0][0], "ERROR", component, lines[0][3])
            log = "".join(f"{stamp} {lvl} {comp}: {message}\n" for stamp, lvl, comp, message in lines)
            files = {LOG: log}
        expected = [
            line for line, (_, lvl, comp, _) in zip(log.splitlines(), lines) if lvl == "ERROR" and comp == component
        ]
        return FamilyTask(
            f"ERROR lines of {component}",
            f"Write every ERROR line of the {component} component in {LOG} to "
            f"/app/errors.log, unchanged and in their original order, and nothing else.",
            files,
            pytest_file(
                read_text_helper(),
                """
                def test_errors_file_exists():
                    assert os.path.isfile("/app/errors.log")""",
                f"""
                def test_only_matching_lines():
                    assert all(" ERROR {component}: " in line for line in read("/app/errors.log").splitlines())
                    assert os.path.isfile("/app/errors.log")""",
                f"""
                def test_every_matching_line_in_order():
                    assert read("/app/errors.log").splitlines() == {expected!r}""",
            ),
            {"test_errors_file_exists": 0.2, "test_only_matching_lines": 0.3, "test_every_matching_line_in_order": 0.5},
            f"grep ' ERROR {component}: ' {LOG} > /app/errors.log || true\n",
            ("filter",),
        )
    counts = Counter(lvl for _, lvl, _, _ in lines)
    expected = [f"{lvl} {n}" for lvl, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    return FamilyTask(
        "Log level summary",
        f"Write /app/summary.txt with one line per level that occurs in {LOG}: the level, "
        "a space and its number of lines, most frequent first (ties in alphabetical order of the level).",
        files,
        pytest_file(
            read_text_helper(),
            """
            def rows():
                return [line.split() for line in read("/app/summary.txt").splitlines() if line.strip()]""",
            f"""
            def test_every_level_listed():
                assert sorted(row[0] for row in rows()) == {sorted(counts)!r}""",
            f"""
            def test_counts_are_correct():
                assert {{row[0]: row[1] for row in rows()}} == {{k: str(v) for k, v in {dict(counts)!r}.items()}}""",
            f"""
            def test_order_is_correct():
                assert [" ".join(row) for row in rows()] == {expected!r}""",
        ),
        {"test_every_level_listed": 0.3, "test_counts_are_correct": 0.4, "test_order_is_correct": 0.3},
        f"awk '{{print $2}}' {LOG} | sort | uniq -c | sort -k1,1nr -k2,2 | awk '{{print $2\" \"$1}}' > "
        "/app/summary.txt\n",
        ("summarise",),
    )
