"""`python -m terminal_rl.evaluate` end to end: real sandboxes, a JSONL report, resume, oracle mode."""

import json
import os
import subprocess
import sys

import pytest

from terminal_rl.config import PROJECT_ROOT
from tests.agent.test_episodes import PARSER

pytestmark = pytest.mark.docker


def evaluate(*overrides):
    return subprocess.run(
        [sys.executable, "-m", "terminal_rl.evaluate", *overrides],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def test_evaluate_writes_report_and_resumes(tmp_path):
    script = tmp_path / "script.json"
    write = "".join(f"  {line}\n" for line in PARSER.splitlines())
    script.write_text(
        json.dumps(
            {
                "csv-file-parsing-amount-sum": [
                    f"<write_file>\nfile_path: parser.py\ncontent: |\n{write}</write_file>"
                    "<finish>\nmessage: done\n</finish>"
                ],
                "debugging-off-by-one-loop-error": ["<finish>\nmessage: nothing to do\n</finish>"],
            }
        )
    )
    overrides = [
        "policy=scripted",
        f"policy.script={script}",
        "attempts=2",
        "concurrency=2",
        "run.id=eval",
        f"run.output_root={tmp_path}",
        "task_ids=[csv-file-parsing-amount-sum,debugging-off-by-one-loop-error]",
    ]
    first = evaluate(*overrides)
    assert first.returncode == 0, first.stderr[-3000:]
    results = tmp_path / "eval" / "eval" / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted((r["task_id"], r["metadata"]["attempt"]) for r in lines) == [
        ("csv-file-parsing-amount-sum", 0),
        ("csv-file-parsing-amount-sum", 1),
        ("debugging-off-by-one-loop-error", 0),
        ("debugging-off-by-one-loop-error", 1),
    ]
    summary = json.loads((results.parent / "summary.json").read_text())
    assert summary["pass_rate"] == 0.5 and summary["pass_at_k"] == {"1": 0.5, "2": 0.5}
    assert summary["terminations"] == {"finished": 4}
    assert "pass rate (score = 1)" in first.stdout and "0.500" in first.stdout
    # The console: the header, the image and episode progress, the results; library output in the log.
    lines = first.stdout.splitlines()
    assert lines[0] == f"terminal_rl evaluate  run eval  ->  {tmp_path / 'eval'}"
    assert "  tasks       terminal_bench_rl.csv: all 2 (1 easy / 1 medium)" in lines
    assert any(line.startswith("task images") and "2/2" in line for line in lines)
    log = tmp_path / "eval" / "logs" / "evaluate.log"
    assert f"  log         {log}  (verbose=true shows it here)" in lines and log.is_file()
    assert first.stderr == "", "nothing reaches the console's stderr: library output goes to the log"

    again = evaluate(*overrides)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 episodes" in again.stdout
    assert len(results.read_text().splitlines()) == 4


def test_oracle_mode_validates_a_task_set(tmp_path, harbor_fixture):
    result = evaluate(
        "policy=oracle",
        "task_set.format=harbor",
        f"task_set.path={harbor_fixture.parent}",
        "run.id=oracle",
        f"run.output_root={tmp_path}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = (tmp_path / "oracle" / "eval" / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["verification"]["score"] == 1.0


def test_an_error_reaches_the_console_with_the_log_that_has_its_trace(tmp_path):
    result = evaluate("policy=oracle", "task_set=tbrl_smoke", "run.id=bad", f"run.output_root={tmp_path}")
    log = tmp_path / "bad" / "logs" / "evaluate.log"
    assert result.returncode == 1
    assert "error: ValueError: policy=oracle runs each task's solution script, and none of the 6 tasks" in result.stdout
    assert f"full output and traceback: {log}" in result.stdout
    assert "Traceback (most recent call last)" in log.read_text() and "Traceback" not in result.stdout
