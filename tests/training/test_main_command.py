"""The README's main command as a new user types it: `make run` on its defaults (the whole default
task set, GRPO, full fine-tuning), for two steps. The first command a user types must never break:
its image preparation (tasks that cannot build leave the run), Ray, verl and validation all run."""

import json
import os
import subprocess

import pytest

from terminal_rl.config import PROJECT_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.verl, pytest.mark.xdist_group("main_command")]


@pytest.mark.timeout(1800)
def test_make_run_trains_two_steps_on_the_default_task_set(tmp_path):
    args = f"trainer.total_training_steps=2 data.val_max_samples=4 run.output_root={tmp_path} run.id=main"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN", "PYTEST"))}
    result = subprocess.run(["make", "run", f"ARGS={args}"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            env=env, timeout=1500)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    assert any(line.startswith("  tasks       terminal_bench_rl.csv: train 295 (") for line in lines), "the whole CSV"
    assert any(line == "  algorithm   grpo, full fine-tuning" for line in lines)
    assert any(line.startswith("step 1/2 ") for line in lines) and any(line.startswith("step 2/2 ") for line in lines)
    assert any(line.startswith("  validation @ step 2: terminal_bench_rl pass rate") for line in lines)
    assert any(line.startswith("done: checkpoints") for line in lines)
    [metrics] = (tmp_path / "main" / "logs").glob("metrics.*.jsonl")
    steps = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2] and all(s["data"]["rollout/masked_fraction"] < 1 for s in steps)
