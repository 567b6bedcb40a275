import subprocess
import sys

from terminal_rl.config import PROJECT_ROOT


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "terminal_rl.tasks", *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_prepare_prints_summary_and_writes_files(tmp_path):
    result = run_cli("command=prepare", "run.id=cli", f"run.output_root={tmp_path}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split() == ["│", "easy", "│", "35", "│", "4", "│", "39", "│"] for line in lines), result.stdout
    assert any(line.split()[:2] == ["│", "all"] and line.split()[-2] == "328" for line in lines)
    assert "Rejected: none" in result.stdout
    assert (tmp_path / "cli" / "data" / "train.parquet").is_file()
    assert len(list((tmp_path / "cli" / "task_store").iterdir())) == 328


def test_prepare_reports_rejected_rows(tmp_path):
    bad = tmp_path / "bad.csv"
    source = (PROJECT_ROOT / "data/terminal_bench_rl.csv").read_text(encoding="utf-8")
    bad.write_text(
        source.replace('test_hook_script_executable"": 0.35', 'test_hook_script_executable"": 0.45'), encoding="utf-8"
    )
    result = run_cli("command=prepare", "run.id=cli", f"run.output_root={tmp_path}", f"task_set.path={bad}")
    assert result.returncode == 0, result.stderr
    assert "Rejected: 1 tasks" in result.stdout
    assert "git-deployment-workflow-setup" in result.stdout and "weights sum to 1.1" in result.stdout


def test_show_and_unknown_task(tmp_path):
    shown = run_cli("command=show", "task_id=draft_dp_7e6f2500")
    assert shown.returncode == 0, shown.stderr
    assert "server-expired.crt" in shown.stdout and "weighted_pytest" in shown.stdout
    missing = run_cli("command=show", "task_id=no-such-task")
    assert missing.returncode == 1
    assert "no task 'no-such-task' in this task set" in missing.stdout


def test_missing_source_is_a_clear_error(tmp_path):
    result = run_cli("command=prepare", f"run.output_root={tmp_path}", f"task_set.path={tmp_path}/nope.csv")
    assert result.returncode == 2
    assert f"Terminal-Bench-RL CSV {tmp_path}/nope.csv does not exist" in result.stdout
