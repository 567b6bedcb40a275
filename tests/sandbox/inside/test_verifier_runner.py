"""The verifier runner's own checks, on this host (no container): interference is found, paths
resolve inside the image's root and never out of it, the image's loader is the one its ELF header
names, and the job and its scoring are pure functions of the task."""

import os
import subprocess
import sys

import pytest

from terminal_rl.sandbox.inside.verifier_runner import inside, interpreter_of, loaders_of, patched_loader
from terminal_rl.sandbox.verify.verifier import VERIFIER_UID, merged_outcomes, score, task_reward, verification_job
from terminal_rl.tasks.model import VerifierKind


def test_a_process_holding_the_verifiers_stdout_is_interference():
    read_end, write_end = os.pipe()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], pass_fds=(write_end,))
    try:
        checker = subprocess.run(
            [
                sys.executable,
                "-c",
                "from terminal_rl.sandbox.inside.verifier_runner import interference; "
                "print(interference(), file=__import__('sys').stderr)",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        holder.kill()
        os.close(read_end)
        os.close(write_end)
    assert f"process {holder.pid} holds pipe:" in checker.stderr


def test_paths_resolve_inside_the_image_root_and_never_out_of_it(tmp_path):
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/python3.13").write_text("")
    (tmp_path / "usr/bin/python3").symlink_to("python3.13")
    (tmp_path / "bin").symlink_to("usr/bin")
    (tmp_path / "usr/bin/escape").symlink_to("/etc/../../etc/passwd")  # absolute: from the image's root
    (tmp_path / "usr/bin/loop").symlink_to("loop")
    assert inside(str(tmp_path), "/bin/python3") == "/usr/bin/python3.13"
    assert inside(str(tmp_path), "/usr/bin/escape") is None, "the host's /etc/passwd is not the image's"
    assert inside(str(tmp_path), "/usr/bin/loop") is None and inside(str(tmp_path), "/nothing") is None
    assert inside(str(tmp_path), "/../../usr/bin") == "/usr/bin"


def test_the_loaders_are_the_ones_the_programs_elf_headers_name_and_are_patched_off_the_agents_files():
    readelf = subprocess.run(["readelf", "-l", "/bin/sh"], capture_output=True, text=True, check=True).stdout
    named = readelf.split("[Requesting program interpreter: ", 1)[1].split("]", 1)[0]
    assert interpreter_of("/bin/sh") == named and loaders_of("/", ["/usr/bin", "/nowhere"]) == {named}
    assert interpreter_of(__file__) is None, "a script names no loader"
    with open(named, "rb") as handle:
        original = handle.read()
    patched = patched_loader(original, named)
    assert len(patched) == len(original)
    for agents in (b"/etc/ld.so.preload", b"/etc/ld.so.cache", b"/lib/x86_64-linux-gnu/\0/usr/lib/x86_64-linux-gnu/\0"):
        assert agents in original and agents not in patched
    assert b"/.il/x86_64-linux-gnu/\0/.iu/lib/x86_64-linux-gnu/\0/.il/\0/.iu/lib/\0" in patched
    with pytest.raises(RuntimeError, match="neither a glibc nor a musl loader"):
        patched_loader(b"\x7fELF not a loader", "/lib/ld-other.so")


def test_the_job_runs_our_tools_with_a_clean_environment(tasks):
    task = tasks["csv-file-parsing-amount-sum"]
    job = verification_job(
        task,
        ["PATH=/evil/bin:/usr/bin", "PYTHONPATH=/app", "LD_PRELOAD=/tmp/x.so", "APP=1"],
        "/app",
        ["CHOWN", "DAC_OVERRIDE"],
    )
    assert job["command"][:3] == ["python3", "-m", "pytest"], "found on the runner's PATH: the image's own first"
    assert job["search_path"] == {
        "image": ["/evil/bin", "/usr/bin"],
        "toolchain": ["/terminal_rl/usr/bin", "/terminal_rl/usr/sbin"],
        "libraries": [],
        "python": ["/app"],
    }
    env = job["environment"]
    assert env["APP"] == "1" and not {"PATH", "PYTHONPATH", "LD_PRELOAD"} & set(env), "the runner sets those"
    assert "--confcutdir=/tests" in env["PYTEST_ADDOPTS"] and env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert job["uid"] == VERIFIER_UID and "WAKE_ALARM" in job["capabilities"]
    assert "pytest.ini" in job["files"] and set(job["files"]) == {"test_outputs.py", "pytest.ini"}
    assert verification_job(task, [], "/app", [])["nonce"] != job["nonce"]


def test_scoring_reads_only_what_the_verifier_allows(tasks):
    from dataclasses import replace

    task = tasks["csv-file-parsing-amount-sum"]
    job = verification_job(task, [], "/app", [])
    passed = '<testsuite><testcase classname="test_outputs" name="test_script_exists"/></testsuite>'
    both = (
        '<testsuite><testcase classname="test_outputs" name="test_script_exists"/>'
        '<testcase classname="test_outputs" name="test_sum_calculation_correct"/></testsuite>'
    )
    raw = {
        "pid": 42,
        "exit_code": 1,
        "timed_out": False,
        "output": "",
        "files": {".terminal_rl_junit/42.xml": passed, ".terminal_rl_junit/77.xml": both, "reward.txt": "1"},
    }
    weighted = score(task, job, raw, "", 1.0)
    assert weighted.score == 0.2, "only the report of the pytest the verifier started counts"
    harbor = score(replace(task, verifier=VerifierKind.HARBOR), job, raw, "", 1.0)
    assert harbor.task_reward == 1.0 and merged_outcomes(raw["files"])["test_sum_calculation_correct"] == "passed"
    assert task_reward({"reward.json": '{"reward": 7}'}) == 1.0 and task_reward({"reward.txt": "nope"}) is None
    interfered = score(task, job, None, "the agent interfered with the verifier: process 9 holds pipe:[1]", 1.0)
    assert (interfered.score, interfered.infrastructure_error) == (0.0, False)
    broken = score(task, job, None, "infrastructure: could not create the verifier container: boom", 1.0)
    assert broken.infrastructure_error and broken.reason == "could not create the verifier container: boom"
