"""The verifier against an agent that attacks it, on both task formats (a Terminal-Bench-RL task scored
by weighted pytest, and the same task exported to Harbor, scored through its test.sh) and both
engines. Every attack runs on top of a no-op (the agent solves nothing), so it must score what a no-op
scores: 0. Honest and partial solutions score 1.0 and their weights."""

import asyncio
import textwrap
from dataclasses import replace

import pytest

from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.attacks import STOLEN_DIR, attack_commands
from terminal_rl.sandbox.verify.verifier import VERIFIER_UID, verify
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]

TASK = "csv-file-parsing-amount-sum"  # tests: test_script_exists (0.2), test_sum_calculation_correct (0.8)
PARSER = "import csv\nprint(sum(float(r['Amount']) for r in csv.DictReader(open('data.csv'))))\n"
ATTACKS = attack_commands(["test_script_exists", "test_sum_calculation_correct"], VERIFIER_UID)


@pytest.fixture(scope="module")
def twins(tasks, tmp_path_factory):
    """The task as it is, and its Harbor export loaded back (same image, tests run by test.sh)."""
    [harbor] = load_harbor(export_harbor(tasks[TASK], tmp_path_factory.mktemp("harbor")), tasks[TASK].limits).tasks
    return tasks[TASK], harbor


@pytest.fixture
def attacked(sandbox_config, run_context):
    """``attacked(weighted, harbor, commands)`` -> (both verifications, outputs, the sandbox's final
    report command output): the commands run as the agent, then each format is verified (the commands
    run again before the second: the first verification may have replaced planted paths)."""

    def run(weighted, harbor, commands, after=None):
        async def main():
            async with SandboxFactory(sandbox_config, run_context) as factory:
                async with factory.task_sandbox(weighted) as sandbox:
                    results = []
                    for task in (weighted, harbor):
                        for command in commands:
                            await sandbox.run(command, timeout=60)
                        results.append(await verify(sandbox, task))
                    seen = (await sandbox.control.run(after, timeout=60, inline=True)).output if after else ""
                    return results, seen

        return asyncio.run(main())

    return run


def test_honest_and_partial_solutions_score_their_weights_in_both_formats(twins, attacked):
    (weighted, harbor), _ = attacked(*twins, [f"cat > parser.py <<'EOF'\n{PARSER}EOF"])
    assert weighted.score == harbor.score == pytest.approx(1.0)
    assert harbor.task_reward == pytest.approx(1.0), "the task's own test.sh agrees"
    (weighted, harbor), _ = attacked(*twins, ["echo 'print(0)' > parser.py"])
    assert weighted.score == harbor.score == pytest.approx(0.2)
    assert (
        weighted.outcomes
        == harbor.outcomes
        == {"test_script_exists": "passed", "test_sum_calculation_correct": "failed"}
    )
    (weighted, harbor), _ = attacked(*twins, [])
    assert weighted.score == harbor.score == 0.0, "a no-op scores 0"


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_scores_no_more_than_a_no_op(twins, attacked, attack):
    (weighted, harbor), stolen = attacked(*twins, ATTACKS[attack], after=f"ls {STOLEN_DIR} 2>/dev/null; true")
    assert (weighted.score, harbor.score) == (0.0, 0.0), (attack, weighted.reason, harbor.reason, harbor.log[-500:])
    assert not weighted.infrastructure_error and not harbor.infrastructure_error, "an attack is never masked"
    assert stolen == "", f"a process of the agent read the verifier's files: {stolen}"


def test_a_preloaded_library_never_enters_the_verifier(twins, with_evil_library):
    (weighted, harbor), marks = with_evil_library(twins, ["echo /tmp/evil.so > /etc/ld.so.preload && true"])
    assert int(marks[-1]) > 0, "the image's own programs do load it: the attack is real"
    assert marks[:-1] == [], "no verifier process loaded it"
    assert (weighted.score, harbor.score) == (0.0, 0.0)


def test_services_and_processes_the_agent_started_are_reachable(twins, attacked):
    weighted, harbor = twins
    checks = textwrap.dedent("""\
        import subprocess
        def test_script_exists():
            assert subprocess.run(['curl', '-sf', 'http://127.0.0.1:8765/'], capture_output=True).returncode == 0
        def test_sum_calculation_correct():
            assert subprocess.run(['pgrep', '-f', 'marker-process'], capture_output=True).returncode == 0
        """)
    weighted = replace(weighted, tests={"test_outputs.py": checks})
    harbor = replace(harbor, tests={**harbor.tests, "test_outputs.py": checks})
    (w, h), _ = attacked(
        weighted,
        harbor,
        [
            "nohup python3 -m http.server 8765 >/dev/null 2>&1 &",
            "nohup python3 -c 'import time; time.sleep(600)' marker-process >/dev/null 2>&1 &",
            "sleep 1",
        ],
    )
    assert w.score == h.score == 1.0, (w.log[-800:], h.log[-800:])
