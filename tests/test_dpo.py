"""`python -m terminal_rl.dpo` on a fixed pair set, on this machine: verl's SFT trainer with our DPO
loss trains one epoch, and the model it saves ranks the chosen episodes higher than before. The
log-probabilities are measured outside verl, with transformers, on the token ids of the records;
the episodes are per-turn (several sequences each), the case a micro-batch could split."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest
import torch

from terminal_rl.config import compose
from terminal_rl.models.tiny import ensure_tiny_model
from tests.datasets.test_rollouts_to_rl import app
from tests.dpo_pairs import write_pairs

pytestmark = pytest.mark.verl


def sequence_logp(model, ids: list[int], mask: list[int]) -> float:
    """Summed log-probability of the masked tokens, each given the tokens before it."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].double()
    token_logps = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return float((token_logps * torch.tensor(mask[1:], dtype=torch.float64)).sum())


def margins(model_dir, pairs: list[dict]) -> list[float]:
    """Per pair: the chosen episode's log-probability minus the rejected one's (all their sequences)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()

    def episode(samples):
        return sum(sequence_logp(model, s["input_ids"], s["loss_mask"]) for s in samples)

    return [episode(p["chosen_samples"]) - episode(p["rejected_samples"]) for p in pairs]


@pytest.fixture(scope="module")
def dpo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("dpo")
    model = compose("dpo", [f"run.output_root={root}"]).model
    ensure_tiny_model(model)
    data = write_pairs(root / "models" / "tiny-qwen3", root / "pairs" / "datasets", history="per_turn")
    # fp32 whatever this CPU computes natively (conf/hardware/cpu.yaml picks bf16 where it can): the
    # figures below are compared with transformers' fp32 ones, and log 2 exactly at step 1.
    result = app(
        "terminal_rl.dpo",
        f"run.output_root={root}",
        "run.id=pairs",
        "verl.data.train_batch_size=2",
        "hardware.param_dtype=fp32",
    )
    return root, pq.read_table(data).to_pylist(), result


def test_one_dpo_epoch_raises_the_chosen_minus_rejected_margin(dpo_run):
    root, pairs, result = dpo_run
    assert all(len(p["chosen_samples"]) == 2 for p in pairs), "per_turn: one sequence per turn"
    before = margins(root / "models" / "tiny-qwen3", pairs)
    after = margins(root / "pairs" / "dpo" / "model", pairs)
    assert sum(after) / len(after) > sum(before) / len(before), (before, after)
    steps = [json.loads(line)["data"] for line in (root / "pairs" / "dpo" / "metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 2, "4 pairs, 2 per step: one epoch"
    # At step 1 the policy is the reference: every pair's margin is 0 and the loss is log 2.
    assert steps[0]["train/loss"] == pytest.approx(math.log(2), abs=1e-6) and steps[0]["dpo/margin"] == 0
    assert steps[1]["dpo/margin"] > 0 and steps[1]["train/loss"] < math.log(2)
    assert "dpo step 1: loss 0.6931  margin 0.0000" in result.stdout and "DPO done: 2 steps" in result.stdout


def test_the_reference_log_probabilities_are_the_starting_models(dpo_run):
    """verl's log-probabilities, shifted to the tokens they predict, equal transformers' (fp32 on CPU)."""
    from transformers import AutoModelForCausalLM

    root, pairs, _ = dpo_run
    reference = torch.load(root / "pairs" / "dpo" / "checkpoints" / "dpo_reference_logps.pt")
    model = AutoModelForCausalLM.from_pretrained(root / "models" / "tiny-qwen3", torch_dtype=torch.float32).eval()
    sequences = [s for p in pairs for key in ("chosen_samples", "rejected_samples") for s in p[key]]
    expected = [sequence_logp(model, s["input_ids"], s["loss_mask"]) for s in sequences]
    assert reference.tolist() == pytest.approx(expected, rel=1e-4)
