"""The sign of our policy-gradient wiring, through verl 0.9.1's real actor update on CPU.

Outside truth: the policy gradient itself. With old log-probs equal to the current ones (ratio 1,
inside the clip range), our ``terminal_rl_vanilla`` loss under token-mean is
``-sum(A * mask) / sum(mask)`` and its gradient is ``-sum(A * mask * grad log p) / sum(mask)``. So one
step must raise the log-probability of the response with A > 0 and lower the one with A < 0 (and
swapping the advantages must negate the gradient), and a token whose loss mask is 0 must add nothing,
whatever its advantage. Two responses with n+ and n- loss tokens give pg_loss = -(n+ - n-) / (n+ + n-).

``actor_sign_probe.py`` (run in a process of its own: verl's worker joins a torch.distributed group)
composes our train config for ``hardware=cpu`` and the tiny learner, loads our plugin as the driver
does, builds verl's ``ActorRolloutRefWorker`` (role actor; its ``init_model`` builds the
``TrainingWorker`` on the fsdp2 engine with ``ppo_loss``, engine_workers.py l. 643-646) and calls
``compute_log_prob`` and ``update_actor`` (l. 703-715: ``infer_batch`` / ``train_mini_batch``) on the
batches verl's v1 trainer sends. verl's code path in the update: ``train_batch`` zeroes gradients,
runs ``forward_backward_batch`` and steps (engine/base.py l. 126-128); the token count comes from the
loss mask of the whole mini-batch (engine/fsdp/transformer_impl.py l. 730); ``ppo_loss`` calls the
registered ``terminal_rl_vanilla`` loss on the response mask (utils/losses.py l. 93-112), which
aggregates with ``agg_loss`` (trainer/ppo/core_algos.py l. 1170-1175); the optimizer clips by
``optim.clip_grad`` and steps (transformer_impl.py l. 808, 827).

Masked tokens are checked on gradients the optimizer actually stepped with (an observer hook on
verl's optimizer; verl zeroes them when it leaves train mode, transformer_impl.py l. 1138): a batch
with a masked group added and advantage 1000 on every masked position gives the same loss, the same
pre-clip gradient norm and the same gradient as the batch without them; the ``leak`` control (the
same positions unmasked) shows what these checks see when masked tokens do count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from tests.support import free_port

pytestmark = pytest.mark.verl

# fp32 (hardware.param_dtype, pinned by the probe): adding rows changes the padded shapes of the
# micro-batches, which moves the gradient by float rounding, 1e-7 of its norm (measured; bf16 moved it
# by 0.3%); a leak moves it by more than 100%.
GRAD_NOISE = 1e-4


@pytest.fixture(scope="session")
def tiny_learner(tmp_path_factory):
    from terminal_rl.models.tiny import make_tiny_model

    model = compose("train_models", ["model=tiny_learner"]).model
    return make_tiny_model(
        tmp_path_factory.mktemp("tiny_learner") / "model", dict(model.architecture), model.tokenizer, seed=0
    )


@pytest.fixture(scope="module")
def probe(tiny_learner, tmp_path_factory):
    out = tmp_path_factory.mktemp("actor_sign")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VERL_", "TERMINAL_RL_RUN")) and k != "CUDA_VISIBLE_DEVICES"
    }
    # One process, world size 1: verl's Worker reads these; the process group is made from a file store.
    env.update(
        PYTHONPATH=str(PROJECT_ROOT),
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        DIST_INIT_METHOD=f"file://{out / 'pg_store'}",
    )
    result = subprocess.run(
        [sys.executable, "-m", "tests.integrations.actor_sign_probe", str(tiny_learner), str(out / "probe.json")],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report = json.loads((out / "probe.json").read_text(encoding="utf-8"))
    return report["config"], report["scenarios"]


def test_the_update_is_verls_actor_with_our_loss_one_optimizer_step(probe):
    config, scenarios = probe
    assert config["loss_mode"] == "terminal_rl_vanilla"
    assert (config["loss_fn"], config["engine"], config["strategy"]) == (
        "verl.workers.utils.losses.ppo_loss",
        "FSDPEngineWithLMHead",
        "fsdp2",
    )
    assert config["loss_agg_mode"] == "token-mean"
    # hardware.param_dtype=fp32 reaches verl's engine: it trains without autocast.
    assert config["autocast_dtype"] == "torch.float32"
    for name, run in scenarios.items():
        assert run["same_start"], f"{name}: reset() gave other initial weights"
        assert run["optimizer_steps"] == 1 and len(run["grad_norm"]) == 1, name
        parameters, with_gradient, total = run["gradients"]
        assert parameters == with_gradient == total > 0, f"{name}: every parameter is trained"
        # Ratio 1 when the update starts: the old log-probs are the ones the update's forward computes.
        assert abs(run["ppo_kl"][0]) < 1e-4 and run["pg_clipfrac"] == [0.0], name


def test_one_update_raises_the_positive_response_and_lowers_the_negative(probe):
    _, scenarios = probe
    main, swapped = scenarios["main"], scenarios["swapped"]
    positive, negative = main["loss_tokens"]
    assert positive != negative, "unequal counts, or the loss would be 0 whatever its sign"
    assert main["pg_loss"][0] == pytest.approx(-(positive - negative) / (positive + negative), rel=1e-4)
    assert swapped["pg_loss"][0] == pytest.approx((positive - negative) / (positive + negative), rel=1e-4)
    (pos_before, neg_before), (pos_after, neg_after) = main["before"], main["after"]
    assert pos_after > pos_before, main
    assert neg_after < neg_before, main
    # The same batch with the advantages swapped: the moves swap, and the gradient is negated.
    assert swapped["before"] == main["before"]
    assert swapped["after"][0] < swapped["before"][0] and swapped["after"][1] > swapped["before"][1], swapped
    assert swapped["vs_main"]["grad_sum_norm"] < 1e-4
    assert swapped["vs_main"]["grad_diff_norm"] == pytest.approx(2.0, rel=1e-4)


def test_masked_tokens_add_nothing_to_the_update(probe):
    _, scenarios = probe
    main, masked, leak = scenarios["main"], scenarios["masked"], scenarios["leak"]
    positive, negative = main["loss_tokens"]
    assert masked["loss_tokens"] == [positive, 0, negative, 0]
    assert masked["response_tokens"][0] > positive, "the first response has a masked tail"
    # Neither the loss (numerator and token count) nor the gradient's size nor its direction changes.
    assert masked["pg_loss"][0] == pytest.approx(main["pg_loss"][0], rel=1e-4)
    assert masked["grad_norm"][0] == pytest.approx(main["grad_norm"][0], rel=1e-3)
    assert masked["vs_main"]["grad_diff_norm"] < GRAD_NOISE
    # AdamW's first step is about lr * sign(gradient): entries near 0 could flip with rounding noise.
    assert masked["vs_main"]["step_diff_norm"] < 1e-3
    assert masked["after"][0] > masked["before"][0] and masked["after"][2] < masked["before"][2], masked
    # The control: the same positions with mask 1 change all of it.
    assert leak["loss_tokens"] == leak["response_tokens"] == masked["response_tokens"]
    assert abs(leak["pg_loss"][0] - main["pg_loss"][0]) > 1.0
    assert leak["grad_norm"][0] > 10 * main["grad_norm"][0]
    assert leak["vs_main"]["grad_diff_norm"] > 0.5 and leak["vs_main"]["step_diff_norm"] > 0.5
