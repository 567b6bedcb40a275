"""Scripting: write small executable shell scripts with arguments and error handling."""

from __future__ import annotations

import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file
from terminal_rl.tasks.model import Difficulty

NAME = "shell_script"
CATEGORY = "scripting"
GREETINGS = ("Hello", "Welcome", "Good morning", "Greetings", "Hi there")
NAMES = ("Ada", "Linus", "Grace", "Ken", "Barbara", "Dennis")
RUN = """
    def run(*args):
        return subprocess.run(list(args), capture_output=True, text=True, timeout=10)"""


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    greeting = rng.choice(GREETINGS)
    if level is Difficulty.EASY:
        script = f"/app/{rng.choice(('hello', 'greet', 'say'))}.sh"
        return FamilyTask(
            "A greeting script",
            f"Create an executable shell script {script} that prints exactly: {greeting}",
            {},
            pytest_file(
                RUN,
                f'''
                def test_script_is_executable():
                    assert os.access("{script}", os.X_OK)''',
                f'''
                def test_script_prints_the_greeting():
                    assert run("{script}").stdout.strip() == "{greeting}"''',
            ),
            {"test_script_is_executable": 0.3, "test_script_prints_the_greeting": 0.7},
            f"printf '#!/bin/sh\\necho \"{greeting}\"\\n' > {script} && chmod +x {script}\n",
            ("echo",),
        )
    if level is Difficulty.MEDIUM:
        first, second = rng.sample(NAMES, 2)
        return FamilyTask(
            "A greeting with an argument",
            f"Create an executable shell script /app/greet.sh that takes a name as its "
            f"argument and prints '{greeting}, NAME!' (for example '{greeting}, {first}!').",
            {},
            pytest_file(
                RUN,
                """
                def test_script_is_executable():
                    assert os.access("/app/greet.sh", os.X_OK)""",
                f'''
                def test_greets_the_example_name():
                    assert run("/app/greet.sh", "{first}").stdout.strip() == "{greeting}, {first}!"''',
                f'''
                def test_greets_another_name():
                    assert run("/app/greet.sh", "{second}").stdout.strip() == "{greeting}, {second}!"''',
            ),
            {"test_script_is_executable": 0.2, "test_greets_the_example_name": 0.4, "test_greets_another_name": 0.4},
            f"printf '#!/bin/sh\\necho \"{greeting}, $1!\"\\n' > /app/greet.sh && chmod +x /app/greet.sh\n",
            ("arguments",),
        )
    lines = [rng.choice(NAMES) if rng.random() < 0.7 else "" for _ in range(rng.randint(5, 12))]
    lines[0] = lines[0] or "start"
    sample_text = "\n".join(lines) + "\n"
    return FamilyTask(
        "Count non-empty lines",
        "Create an executable shell script /app/count.sh FILE that prints the number of "
        "non-empty lines of FILE; when FILE does not exist it prints an error to stderr and exits with status 1. "
        "/app/sample.txt is an example input.",
        {"/app/sample.txt": sample_text},
        pytest_file(
            RUN,
            """
            def test_script_is_executable():
                assert os.access("/app/count.sh", os.X_OK)""",
            f'''
            def test_counts_the_sample():
                assert run("/app/count.sh", "/app/sample.txt").stdout.strip() == "{sum(bool(x) for x in lines)}"''',
            '''
            def test_counts_another_file(tmp_path):
                other = tmp_path / "other.txt"
                other.write_text("a\\n\\nb\\nc\\n\\n")
                assert run("/app/count.sh", str(other)).stdout.strip() == "3"''',
            """
            def test_missing_file_fails():
                result = run("/app/count.sh", "/nonexistent/file")
                assert result.returncode == 1 and result.stderr.strip() and os.access("/app/count.sh", os.X_OK)""",
        ),
        {
            "test_script_is_executable": 0.1,
            "test_counts_the_sample": 0.3,
            "test_counts_another_file": 0.3,
            "test_missing_file_fails": 0.3,
        },
        'cat > /app/count.sh <<\'SH\'\n#!/bin/sh\n[ -f "$1" ] || { echo "no such file: $1" >&2; exit 1; }\n'
        'grep -c . "$1"\nSH\nchmod +x /app/count.sh\n',
        ("error-handling",),
    )
