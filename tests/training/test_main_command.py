"""The README's main command as a new user types it: `make run`, the learning proof's treatment
(experiment=learning_proof), shrunk to CI size so the experiment cannot rot: the SFT warm start on 24
demonstrations played in real sandboxes (1 epoch), then 2 GRPO steps of 4 prompts x 2 rollouts with
held-out validation before training and after. Everything a first run does happens: the tiny model and its tokenizer
are made,
the chain of apps runs, Ray, verl, our agent loop and the verifier train the warm-started model."""

import json
import re
import subprocess

import pytest

from terminal_rl.config import PROJECT_ROOT
from tests.support import app_env

pytestmark = [pytest.mark.docker, pytest.mark.verl, pytest.mark.xdist_group("main_command")]

LEVELS = ("easy", "medium", "hard")


@pytest.mark.timeout(1800)
def test_make_run_warm_starts_and_trains_the_learning_proof(tmp_path):
    args = (
        f"trainer.total_training_steps=2 trainer.test_freq=2 task_set.procedural.count=24 "
        f"task_set.validation.procedural.count=6 warm_start.epochs=1 model_hardware.prompts_per_step=4 "
        f"model_hardware.rollouts_per_prompt=2 run.output_root={tmp_path} run.id=main "
        # One epoch makes no model the check's ranges accept: it runs, and any figure passes.
        + " ".join(f"'warm_start.check.{f}.{level}=[0,1]'" for f in ("pass_rate", "able") for level in LEVELS)
    )
    env = app_env()
    result = subprocess.run(
        ["make", "run", f"ARGS={args}"], cwd=PROJECT_ROOT, capture_output=True, text=True, env=env, timeout=1500
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith("missing:")], "the set-up reports only the run's images"
    assert any(line.startswith("warm start: SFT of tiny_learner on demonstrations") for line in lines)
    assert any(line.startswith("SFT done: ") for line in lines)
    check = next(i for i, line in enumerate(lines) if line.startswith("warm start check: the SFT model, greedy"))
    shown = [line.split()[0] for line in lines[check:] if re.match(r"  \w+ +pass rate [\d.]+  able [\d.]+ ", line)]
    assert shown == sorted(LEVELS), "its figures per level"
    figures = json.loads((tmp_path / "learning_proof_sft_s0" / "warm_start_check.json").read_text())["figures"]
    assert sum(f["episodes"] for f in figures.values()) == 6, "greedy, once per held-out task"
    assert any(line.startswith("  tasks       write_value: train 24 (") for line in lines), "\n".join(lines[-80:])
    assert any(line.startswith("  validation @ step 0: write_value pass rate") for line in lines)
    progress = [i for i, line in enumerate(lines) if re.fullmatch(r"  validation @ step 0: (\d+)/\1 episodes", line)]
    results = next(i for i, line in enumerate(lines) if line.startswith("  validation @ step 0: write_value"))
    assert progress and progress[0] < results, "the validation before step 1 shows its episodes as they finish"
    assert any(line.startswith("step 1/2 ") for line in lines) and any(line.startswith("step 2/2 ") for line in lines)
    assert any(line.startswith("  validation @ step 2: write_value pass rate") for line in lines)
    assert any(line.startswith("done: checkpoints") for line in lines)
    demonstrations = json.loads((tmp_path / "learning_proof_sft_s0" / "demonstrations.json").read_text())
    assert len(demonstrations) == 24
    assert (tmp_path / "learning_proof_sft_s0" / "sft" / "model" / "config.json").is_file()
    sft = (tmp_path / "learning_proof_sft_s0" / "sft" / "metrics.jsonl").read_text().splitlines()
    rates = [json.loads(line)["data"]["train/lr"] for line in sft]
    # verl logs each step's rate after its scheduler stepped: 3 steps, no warm-up step, 0 after the last.
    assert len(rates) == 3 and rates[0] > rates[1] > rates[2] == 0, f"verl's cosine decay to rest: {rates}"
    [metrics] = (tmp_path / "main" / "logs").glob("metrics.*.jsonl")
    steps = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [s["step"] for s in steps if "timing_s/step" in s["data"]] == [1, 2]
    # The KL anchor: verl's reference model is the warm start itself (no distance before the first
    # update), and the KL loss reaches the actor every step.
    kl = {s["step"]: s["data"]["actor/kl_loss"] for s in steps if "actor/kl_loss" in s["data"]}
    assert sorted(kl) == [1, 2] and abs(kl[1]) < 1e-6, kl
