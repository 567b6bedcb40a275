"""Verification against real tasks from the shared CSV, and against an agent that tries to game it."""

import asyncio
from dataclasses import replace

import pytest

from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import Environment, VerifierKind
from tests.support import BASE_IMAGE

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]

CSV_SUM = "csv-file-parsing-amount-sum"
OFF_BY_ONE = "debugging-off-by-one-loop-error"
LRU = "lru-cache-implementation"


@pytest.fixture(scope="module")
def tasks(tbrl_csv, default_limits):
    return {t.id: t for t in load_tbrl_csv(tbrl_csv, default_limits).tasks}


@pytest.fixture
def rollout(sandbox_config, run_context):
    """``rollout(task, commands)`` runs the commands as the agent would, then verifies."""

    def run(task, commands=(), before_verify=None):
        async def main():
            async with SandboxFactory(sandbox_config, run_context) as factory:
                async with factory.task_sandbox(task) as sandbox:
                    outputs = [await sandbox.run(command, timeout=60) for command in commands]
                    extra = await before_verify(sandbox) if before_verify else None
                    result = await verify(sandbox, task)
                    return result, outputs, extra

        return asyncio.run(main())

    return run


def synthetic(task, tests: str, weights: dict[str, float] | None, **limits):
    """A task of our own on the base image (no build) with the given test source."""
    return replace(
        task,
        id="synthetic",
        environment=Environment(image=BASE_IMAGE),
        tests={"test_outputs.py": tests},
        test_weights=weights,
        files={},
        limits=replace(task.limits, **limits),
    )


def test_untouched_environments_score_below_one(tasks, rollout):
    for task_id in (CSV_SUM, OFF_BY_ONE, LRU):
        result, _, _ = rollout(tasks[task_id])
        assert result.score < 1.0, task_id
        assert result.reason == "" and not result.infrastructure_error
        assert set(result.weights) == set(tasks[task_id].test_weights)


def test_scripted_fixes_score_one(tasks, rollout):
    parser = "import csv\nprint(sum(float(r['Amount']) for r in csv.DictReader(open('data.csv'))))\n"
    fixed_sum, outputs, _ = rollout(tasks[CSV_SUM], [f"cat > parser.py <<'EOF'\n{parser}EOF", "python3 parser.py"])
    assert outputs[1].output.strip() == "425.0"
    assert fixed_sum.score == pytest.approx(1.0)
    assert set(fixed_sum.outcomes.values()) == {"passed"}
    fixed_loop, _, _ = rollout(
        tasks[OFF_BY_ONE], ["sed -i 's/range(len(my_list) - 1)/range(len(my_list))/' summarize.py"]
    )
    assert fixed_loop.score == pytest.approx(1.0)


def test_partial_fixes_score_the_weights_of_passing_tests(tasks, rollout):
    wrong_sum, _, _ = rollout(tasks[CSV_SUM], ["echo 'print(0)' > parser.py"])
    assert wrong_sum.score == pytest.approx(0.2)
    assert wrong_sum.outcomes == {"test_script_exists": "passed", "test_sum_calculation_correct": "failed"}
    # Mentions the right range in a comment without fixing the loop: only the content check passes.
    comment_only, _, _ = rollout(
        tasks[OFF_BY_ONE],
        [
            "echo '# range(len(my_list))' >> summarize.py",
            "sed -i 's/range(len(my_list) - 1)/range(len(my_list)-1)/' summarize.py",
        ],
    )
    assert comment_only.score == pytest.approx(0.4)


def test_tests_are_not_in_the_container_before_verification(tasks, rollout):
    search = (
        "grep -rl --exclude-dir=proc --exclude-dir=sys test_sum_calculation_correct / 2>/dev/null | head -3; echo done"
    )
    result, outputs, _ = rollout(tasks[CSV_SUM], [search])
    assert outputs[0].output == "done\n"


TAMPERING = [
    # conftest.py that marks every test passed, wherever pytest might look for it
    *(
        f"mkdir -p {d} && printf '%s\\n' 'import pytest' '@pytest.hookimpl(hookwrapper=True)' "
        f"'def pytest_runtest_makereport(item, call):' '    o = yield' '    o.get_result().outcome = \"passed\"' "
        f"> {d}/conftest.py"
        for d in ("/app", "/tmp", "/")
    ),
    # a fake pytest module and ini files with plugin options in the working directory and above
    "printf 'import sys\\nprint(\"fake\")\\nsys.exit(0)\\n' > /app/pytest.py",
    "printf '[pytest]\\naddopts = -p no:junitxml\\n' | tee /app/pytest.ini /tmp/pytest.ini /pytest.ini > /dev/null",
    # interpreter start-up hooks
    "d=$(python3 -c 'import site; print(site.getsitepackages()[0])'); mkdir -p $d; "
    'echo \'import os; os.environ["PYTEST_ADDOPTS"] = "--co"\' > $d/sitecustomize.py; '
    "echo 'import sys; sys.exit(0)' > $d/zzz_evil.pth",
    # environment and reward files a naive harness would read
    "echo 'export PYTEST_ADDOPTS=--co' >> ~/.bashrc; export PYTEST_ADDOPTS=--co PYTHONPATH=/app",
    "mkdir -p /logs/verifier && echo 1.0 > /logs/verifier/reward.txt && echo 1.0 > /app/reward.txt",
    'printf \'<testsuite><testcase classname="test_outputs" name="test_sum_calculation_correct"/></testsuite>\' '
    "| tee /tmp/report.xml /app/report.xml /tmp/junit.xml > /dev/null",
]


def test_planted_files_do_not_change_the_score(tasks, rollout):
    baseline, _, _ = rollout(tasks[CSV_SUM], ["echo 'print(0)' > parser.py"])
    tampered, outputs, _ = rollout(tasks[CSV_SUM], ["echo 'print(0)' > parser.py", *TAMPERING])
    assert [o.exit_code for o in outputs] == [0] * len(outputs)
    assert tampered.score == baseline.score == pytest.approx(0.2)
    assert tampered.outcomes == baseline.outcomes


def test_services_started_by_the_agent_keep_running(tasks, rollout):
    task = synthetic(
        tasks[CSV_SUM],
        "import subprocess\n\ndef test_service():\n"
        "    assert subprocess.run(['curl', '-sf', 'http://127.0.0.1:8765/'], capture_output=True).returncode == 0\n",
        {"test_service": 1.0},
    )
    result, _, _ = rollout(task, ["nohup python3 -m http.server 8765 >/dev/null 2>&1 &", "sleep 1"])
    assert result.score == 1.0


def test_skip_xfail_and_collection_errors_are_not_passed(tasks, rollout):
    source = (
        "import pytest\n\ndef test_ok():\n    pass\n\n@pytest.mark.skip\ndef test_skipped():\n    pass\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert False\n"
    )
    result, _, _ = rollout(
        synthetic(tasks[CSV_SUM], source, {"test_ok": 0.5, "test_skipped": 0.25, "test_xfail": 0.25})
    )
    assert result.score == 0.5
    assert result.outcomes == {"test_ok": "passed", "test_skipped": "skipped", "test_xfail": "skipped"}
    broken, _, _ = rollout(
        synthetic(tasks[CSV_SUM], "import not_a_module\n\ndef test_a():\n    pass\n", {"test_a": 1.0})
    )
    assert (broken.score, broken.reason) == (0.0, "collection error (pytest exit 2)")


def test_verifier_timeout_scores_zero_with_reason(tasks, rollout):
    task = synthetic(
        tasks[CSV_SUM],
        "import time\n\ndef test_slow():\n    time.sleep(60)\n",
        {"test_slow": 1.0},
        verifier_timeout_sec=3,
    )
    result, _, _ = rollout(task)
    assert (result.score, result.reason) == (0.0, "verifier timeout")
    assert 3 <= result.duration_sec < 30


def test_harbor_task_reward_from_test_sh(harbor_fixture, default_limits, rollout):
    [task] = load_harbor(harbor_fixture, default_limits).tasks
    assert task.verifier is VerifierKind.HARBOR
    planted, _, _ = rollout(task, ["mkdir -p /logs/verifier /tests && echo 1 > /logs/verifier/reward.txt"])
    assert (planted.score, planted.reason) == (0.0, "")
    solved, _, _ = rollout(task, [task.solution])
    assert solved.score == 1.0


def test_the_record_holds_what_changed_and_what_the_tests_read(tasks, rollout):
    """The forged-fixture filter's facts: the engine's diff as the tests found the container, start
    files the agent rewrote, and files the tests' Python processes read (here, through the agent's
    parser.py that the tests run)."""
    forge = [
        "printf 'ID,Name,Amount\\n1,X,425\\n' > data.csv",
        'echo \'print(sum(int(l.split(",")[2]) for l in open("data.csv").readlines()[1:]))\' > parser.py',
        "echo changed > notes.txt",
    ]
    task = replace(tasks[CSV_SUM], files={"notes.txt": b"original\n", "kept.txt": b"kept\n"})
    result, _, _ = rollout(task, forge)
    assert result.score == 1.0, "the forged fixture passes the tests: only the facts can tell"
    assert result.changes["/app/data.csv"] == "modified" and result.changes["/app/parser.py"] == "added"
    assert not any(
        path.startswith(("/terminal_rl", "/.terminal_rl_lease", "/tmp/.trl-shell-", "/usr/sbin/docker-init"))
        for path in result.changes
    ), "our mounts, the shell's state and the engine's init are not the agent's"
    assert "/app" not in result.changes, "a directory is listed only when nothing inside it explains its change"
    assert result.start_files_changed == ["/app/notes.txt"]
    assert "/app/kept.txt" not in result.changes and result.changes["/app/notes.txt"] in ("added", "modified"), (
        "start files the episode left alone are not its changes"
    )
    assert {"/app/data.csv", "/app/parser.py"} <= set(result.reads)
    assert not any(path == "/tmp" or path.startswith("/tmp/") for path in result.reads), (
        "no directories, no files it made"
    )
    assert not any(path.startswith(("/tests/", "/terminal_rl/")) for path in result.reads)
