"""`python -m terminal_rl.filter` with the scripted policy on real tasks in real sandboxes."""

import json
import os
import subprocess
import sys

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.filtering.pass_rate import decide
from tests.agent.test_episodes import PARSER

SOLVE = [
    "<write_file>\nfile_path: /app/parser.py\ncontent: |\n"
    + "".join(f"  {line}\n" for line in PARSER.splitlines())
    + "</write_file>\n<finish>\nmessage: done\n</finish>"
]
GIVE_UP = ["<finish>\nmessage: no idea\n</finish>"]


def test_decisions():
    assert decide("t", [0.4, 0.4, 0.4], 0.0, 0.0, 1.0).reason == "all 3 attempts scored 0.4"
    assert decide("t", [0.0, 1.0], 0.0, 0.0, 1.0).keep
    assert decide("t", [0.9, 1.0], 0.0, 0.0, 0.8).reason == "mean 0.95 outside [0, 0.8]"
    assert not decide("t", [], None, 0.0, 1.0).keep


@pytest.mark.docker
def test_filter_end_to_end_with_cache(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"csv-file-parsing-amount-sum": [SOLVE, GIVE_UP], "debugging-off-by-one-loop-error": [GIVE_UP]})
    )
    command = [
        sys.executable,
        "-m",
        "terminal_rl.filter",
        "policy=scripted",
        f"policy.script={script}",
        "task_set=tbrl_smoke",
        "split=all",
        "concurrency=1",
        "data_filter.attempts=2",
        "run.id=filter",
        f"run.output_root={tmp_path}",
        "task_ids=[csv-file-parsing-amount-sum,debugging-off-by-one-loop-error]",
    ]
    env = {**os.environ, "COLUMNS": "200"}
    first = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    keep = json.loads((tmp_path / "filters" / "pass_rate_keep.json").read_text())
    assert keep["kept"] == ["csv-file-parsing-amount-sum"]
    assert keep["dropped"] == {"debugging-off-by-one-loop-error": "all 2 attempts scored 0"}
    assert sorted(keep["tasks"]["csv-file-parsing-amount-sum"]["scores"]) == [0.0, 1.0]
    assert keep["tasks"]["csv-file-parsing-amount-sum"]["noop_baseline"] == 0.0
    assert keep["summary"]["saved_fraction"] == 0.5 and "training skips 50% of its rollouts" in first.stdout
    header = first.stdout.splitlines()[:7]
    assert header[0] == f"terminal_rl filter  run filter  ->  {tmp_path / 'filter'}"
    assert "  keeps       tasks whose mean score over k=2 attempts is in [0.0, 1.0], 1 episodes at once" in header
    assert first.stderr == "" and (tmp_path / "filter" / "logs" / "filter.log").is_file(), "library output in the log"
    again = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and "0 episodes" in again.stdout, "cached by (task hash, policy, k)"
