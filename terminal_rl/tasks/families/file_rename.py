"""File operations: rename and move the files of a directory by a pattern."""

from __future__ import annotations

import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file
from terminal_rl.tasks.model import Difficulty

NAME = "file_rename"
CATEGORY = "file-operations"
WORDS = ("alpha", "bravo", "delta", "omega", "sigma", "kappa", "lambda", "theta")
INBOX = "/app/inbox"


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    numbers = rng.sample(range(1, 99), rng.randint(3, 6))
    texts = {n: f"{rng.choice(WORDS)} {rng.randint(1000, 9999)}\n" for n in numbers}
    files = {f"{INBOX}/report_{n}.txt": text for n, text in texts.items()}
    if level is Difficulty.EASY:
        extension = rng.choice(("md", "bak", "old"))
        renamed = {f"report_{n}.{extension}": text for n, text in texts.items()}
        instruction = (
            f"Rename every .txt file in {INBOX} so that it ends in .{extension} instead (keep the rest of the name)."
        )
        solution = f'cd {INBOX} && for f in *.txt; do mv "$f" "${{f%.txt}}.{extension}"; done\n'
        return _task("Change extensions", instruction, files, renamed, [f"report_{n}.txt" for n in numbers], solution)
    if level is Difficulty.MEDIUM:
        logs = {f"job_{rng.randint(100, 999)}_{i}.log": f"{rng.choice(WORDS)}\n" for i in range(rng.randint(2, 4))}
        files.update({f"{INBOX}/{name}": text for name, text in logs.items()})
        instruction = (
            f"Move every .log file from {INBOX} into /app/archive (create it); leave the other files where they are."
        )
        solution = f"mkdir -p /app/archive && mv {INBOX}/*.log /app/archive/\n"
        return FamilyTask(
            "Archive logs",
            instruction,
            files,
            pytest_file(
                f"""
                def test_archive_holds_exactly_the_logs():
                    assert sorted(os.listdir("/app/archive")) == {sorted(logs)!r}""",
                f'''
                def test_no_log_left_in_inbox():
                    assert os.path.isdir("/app/archive")
                    assert not [f for f in os.listdir("{INBOX}") if f.endswith(".log")]''',
                f"""
                def test_archived_contents_intact():
                    for name, text in {logs!r}.items():
                        assert open(os.path.join("/app/archive", name), encoding="utf-8").read() == text""",
            ),
            {
                "test_archive_holds_exactly_the_logs": 0.5,
                "test_no_log_left_in_inbox": 0.3,
                "test_archived_contents_intact": 0.2,
            },
            solution,
            ("move",),
        )
    renamed = {f"{n:03d}_report.txt": text for n, text in texts.items()}
    instruction = (
        f"Rename every file report_<N>.txt in {INBOX} to <N>_report.txt with N zero-padded to three "
        "digits (report_7.txt becomes 007_report.txt)."
    )
    solution = (
        f"cd {INBOX} && for f in report_*.txt; do n=${{f#report_}}; n=${{n%.txt}}; "
        f'mv "$f" "$(printf \'%03d\' "$n")_report.txt"; done\n'
    )
    return _task("Zero-padded names", instruction, files, renamed, [f"report_{n}.txt" for n in numbers], solution)


def _task(
    title: str, instruction: str, files: dict[str, str], renamed: dict[str, str], old: list[str], solution: str
) -> FamilyTask:
    return FamilyTask(
        title,
        instruction,
        files,
        pytest_file(
            f'''
            def test_old_names_gone():
                assert not set({old!r}) & set(os.listdir("{INBOX}"))
                assert set({sorted(renamed)!r}) & set(os.listdir("{INBOX}"))''',
            f'''
            def test_new_names_exist():
                assert set({sorted(renamed)!r}) <= set(os.listdir("{INBOX}"))''',
            f'''
            def test_contents_kept():
                for name, text in {renamed!r}.items():
                    assert open(os.path.join("{INBOX}", name), encoding="utf-8").read() == text''',
        ),
        {"test_old_names_gone": 0.3, "test_new_names_exist": 0.4, "test_contents_kept": 0.3},
        solution,
        ("rename",),
    )
