"""The verifier runner's own checks, on this host (no container): interference is found, planted
paths become real directories, and the job and its scoring are pure functions of the task."""

import os
import subprocess
import sys

from terminal_rl.sandbox.verifier import VERIFIER_UID, merged_outcomes, score, task_reward, verification_job
from terminal_rl.sandbox.verifier_runner import fresh_directory
from terminal_rl.tasks.model import VerifierKind


def test_a_process_holding_the_verifiers_stdout_is_interference():
    read_end, write_end = os.pipe()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], pass_fds=(write_end,))
    try:
        checker = subprocess.run([sys.executable, "-c", "from terminal_rl.sandbox.verifier_runner import interference; "
                                  "print(interference(), file=__import__('sys').stderr)"],
                                 stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        holder.kill()
        os.close(read_end)
        os.close(write_end)
    assert f"process {holder.pid} holds pipe:" in checker.stderr


def test_planted_symlinks_and_files_on_the_way_become_real_directories(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "logs").symlink_to(tmp_path / "elsewhere")
    fresh_directory(str(tmp_path / "logs" / "verifier"))
    assert not (tmp_path / "logs").is_symlink() and (tmp_path / "logs" / "verifier").is_dir()
    assert not (tmp_path / "elsewhere" / "verifier").exists(), "nothing was created through the planted link"
    (tmp_path / "tests").write_text("planted")
    fresh_directory(str(tmp_path / "tests"))
    assert (tmp_path / "tests").is_dir()


def test_the_job_runs_our_tools_with_a_clean_environment(tasks):
    task = tasks["csv-file-parsing-amount-sum"]
    job = verification_job(task, ["PATH=/evil/bin:/usr/bin", "PYTHONPATH=/app", "LD_PRELOAD=/tmp/x.so", "APP=1"],
                           "/app", ["CHOWN", "DAC_OVERRIDE"])
    assert job["command"][:3] == ["/terminal_rl/usr/bin/python3.11", "-m", "pytest"]
    env = job["environment"]
    assert env["PATH"].startswith("/terminal_rl/usr/bin:/terminal_rl/usr/sbin:") and env["APP"] == "1"
    assert "PYTHONPATH" not in env and "LD_PRELOAD" not in env
    assert "--confcutdir=/tests" in env["PYTEST_ADDOPTS"] and env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert job["uid"] == VERIFIER_UID and "WAKE_ALARM" in job["capabilities"]
    assert "pytest.ini" in job["files"] and set(job["files"]) == {"test_outputs.py", "pytest.ini"}
    assert verification_job(task, [], "/app", [])["nonce"] != job["nonce"]


def test_scoring_reads_only_what_the_verifier_allows(tasks):
    from dataclasses import replace

    task = tasks["csv-file-parsing-amount-sum"]
    job = verification_job(task, [], "/app", [])
    passed = '<testsuite><testcase classname="test_outputs" name="test_script_exists"/></testsuite>'
    both = ('<testsuite><testcase classname="test_outputs" name="test_script_exists"/>'
            '<testcase classname="test_outputs" name="test_sum_calculation_correct"/></testsuite>')
    raw = {"pid": 42, "exit_code": 1, "timed_out": False, "output": "", "files": {
        ".terminal_rl_junit/42.xml": passed, ".terminal_rl_junit/77.xml": both, "reward.txt": "1"}}
    weighted = score(task, job, raw, "", 1.0)
    assert weighted.score == 0.2, "only the report of the pytest the verifier started counts"
    harbor = score(replace(task, verifier=VerifierKind.HARBOR), job, raw, "", 1.0)
    assert harbor.task_reward == 1.0 and merged_outcomes(raw["files"])["test_sum_calculation_correct"] == "passed"
    assert task_reward({"reward.json": '{"reward": 7}'}) == 1.0 and task_reward({"reward.txt": "nope"}) is None
    interfered = score(task, job, None, "the agent interfered with the verifier: process 9 holds pipe:[1]", 1.0)
    assert (interfered.score, interfered.infrastructure_error) == (0.0, False)
    broken = score(task, job, None, "infrastructure: could not create the verifier container: boom", 1.0)
    assert broken.infrastructure_error and broken.reason == "could not create the verifier container: boom"
