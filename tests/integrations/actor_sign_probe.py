"""One policy-gradient update through verl 0.9.1's real actor, on CPU, for ``test_actor_update_sign.py``.

    python -m tests.integrations.actor_sign_probe MODEL_DIR OUT_JSON      (one process, gloo)

The actor is what our training run builds: our train config (``hardware=cpu`` in fp32, the tiny
learner, ``policy_loss.loss_mode=terminal_rl_vanilla``, AdamW, token-mean) composed and resolved as the driver
does, our plugin loaded by ``driver.apply_environment``, then verl's ``ActorRolloutRefWorker`` (role
``actor``) and its ``init_model``, ``compute_log_prob`` and ``update_actor``. Nothing of verl is patched.

The batches are what verl's v1 trainer hands the worker after TransferQueue: one row per trajectory,
every per-sample field a jagged nested tensor (the agent loop's fields, ``agent_loop_tq.py``
l. 182-203; TransferQueue packs tensor fields as jagged nested tensors, ``simple_storage_manager.py``
l. 572-574), and the trainer's ``extra_info`` as non-tensor entries (``transferqueue_utils.py``
l. 172-177), accumulated over the step as the trainer updates one ``extra_info``: ``trainer_base.py``
l. 1651-1658 for the log-probs, l. 1847-1860 for the update. One difference: the update's mini-batch
is the whole batch (the trainer's is ``ppo_mini_batch_size * rollout.n`` rows), so one update is one
optimizer step.

Scenarios, each from the same initial weights and a fresh optimizer (``TrainingWorker.reset``):

* ``main``: a prompt with two responses, advantages +1 / -1 broadcast over the response mask as
  verl's GRPO does (``scores.unsqueeze(-1) * response_mask``, core_algos.py l. 329); the first
  response ends with a masked tool-output segment (loss mask 0, as our agent loop marks observations);
* ``swapped``: the same batch with advantages -1 / +1;
* ``masked``: ``main`` plus a masked group (two rows, response mask all 0), with advantage 1000 on every
  masked position, in the masked group and in the first response's masked tail;
* ``leak``: ``masked`` with those positions' masks set to 1 (the control: what a leak would do).

Per scenario: summed log-probs of each row's loss tokens before and after the one optimizer step
(``compute_log_prob``, the trainer's ``old_log_probs`` path), the update's metrics, the gradients the
optimizer stepped with and the weight change, compared with ``main``'s. Written as JSON to OUT_JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# AdamW's first step moves every weight by about lr whatever its gradient's size (m / sqrt(v) = sign(g)):
# at 1e-2 (half the weights' init std of 0.02) one step leaves the first-order regime, and with the
# advantages swapped both log-probs rose. At 1e-3 the two rows move by about +-4 nats, symmetrically.
LR = 1e-3
HUGE = 1000.0
PROMPT = "Write the value 7 into out.txt"
GOOD, BAD = "echo 7 > out.txt", "cat README"
OBSERVATION = "<tool_response>ok</tool_response>"  # a tool output inside the first response: masked
MASKED_PROMPT, MASKED_RESPONSES = "Count the lines of data.csv", ("wc -l data.csv", "ls")


def compose_config(model_dir: Path, out_dir: Path):
    from omegaconf import OmegaConf

    from terminal_rl.config import compose

    cfg = compose(
        "train",
        [
            "run.id=actor-sign",
            "hardware=cpu",
            "hardware.param_dtype=fp32",
            "model=tiny_learner",
            "model_hardware.micro_batch_per_gpu=2",
            f"run.output_root={out_dir}",
            f"model.path={model_dir}",
            f"actor_rollout_ref.actor.optim.lr={LR}",
        ],
    )
    OmegaConf.resolve(cfg)  # as the driver does before verl sees the config (driver.py train())
    return cfg


def rows(tokenizer, scenario: str) -> list[dict]:
    """(prompt ids, response ids, response mask, advantage per response token) per row."""
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompt, good, bad, observation = encode(PROMPT), encode(GOOD), encode(BAD), encode(OBSERVATION)
    sign = -1.0 if scenario == "swapped" else 1.0
    first = {
        "prompt": prompt,
        "response": good + observation,
        "mask": [1] * len(good) + [0] * len(observation),
        "score": sign,
    }
    second = {"prompt": prompt, "response": bad, "mask": [1] * len(bad), "score": -sign}
    batch = [first, second]
    for row in batch:  # verl's GRPO: the trajectory's advantage on every loss token, 0 elsewhere
        row["advantage"] = [row["score"] * m for m in row["mask"]]
    if scenario in ("masked", "leak"):
        first["advantage"] = [a if m else HUGE for a, m in zip(first["advantage"], first["mask"])]
        masked = [
            {
                "prompt": encode(MASKED_PROMPT),
                "response": encode(r),
                "mask": [0] * len(encode(r)),
                "advantage": [HUGE] * len(encode(r)),
            }
            for r in MASKED_RESPONSES
        ]
        batch = [first, masked[0], second, masked[1]]  # two micro-batches, a masked row in each
        if scenario == "leak":
            for row in batch:
                row["mask"] = [1] * len(row["mask"])
    return batch


def nested(values, dtype):
    import torch

    return torch.nested.as_nested_tensor([torch.tensor(v, dtype=dtype) for v in values], layout=torch.jagged)


def rollout_batch(batch: list[dict], temperature: float):
    """The worker's input for ``compute_log_prob``: the agent loop's per-sample fields."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu

    full = [row["prompt"] + row["response"] for row in batch]
    data = TensorDict(
        {
            "prompts": nested([row["prompt"] for row in batch], torch.int64),
            "responses": nested([row["response"] for row in batch], torch.int64),
            "response_mask": nested([row["mask"] for row in batch], torch.int64),
            "loss_mask": nested([row["mask"] for row in batch], torch.int64),
            "input_ids": nested(full, torch.int64),
            "position_ids": nested([list(range(len(ids))) for ids in full], torch.int64),
        },
        batch_size=[len(batch)],
    )
    for key, val in {"calculate_entropy": True, "compute_loss": False, "temperature": temperature}.items():
        tu.assign_non_tensor_data(data, key, val)
    return data


def response_log_probs(worker, batch: list[dict], temperature: float):
    """The trainer's old_log_probs: the worker's log-probs cut to the response (trainer_base.py l. 1658, 1667)."""
    from verl.workers.utils.padding import response_from_nested

    data = rollout_batch(batch, temperature)
    output = worker.compute_log_prob(data)
    return response_from_nested(output["log_probs"], data["response_mask"])


def loss_token_sums(log_probs, batch: list[dict]) -> list[float]:
    return [
        float(sum(lp * m for lp, m in zip(row_lp.tolist(), row["mask"])))
        for row_lp, row in zip(log_probs.unbind(), batch)
    ]


def update(worker, cfg, batch: list[dict], old_log_probs):
    """One ``update_actor`` on the whole batch as one mini-batch (so exactly one optimizer step)."""
    import torch
    from verl.utils import tensordict_utils as tu

    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    data = rollout_batch(batch, rollout.temperature)  # with the log-prob call's extra_info, as in the trainer
    data["old_log_probs"] = old_log_probs
    data["advantages"] = nested([row["advantage"] for row in batch], torch.float32)
    extra_info = {  # trainer_base.py l. 1847-1857; the mini-batch is the whole batch here
        "calculate_entropy": actor.calculate_entropy or actor.entropy_coeff != 0.0,
        "distillation_use_topk": False,
        "distillation_only": False,
        "global_batch_size": len(batch),
        "mini_batch_size": len(batch),
        "epochs": actor.ppo_epochs,
        "seed": actor.data_loader_seed,
        "dataloader_kwargs": {"shuffle": actor.shuffle},
        "temperature": rollout.temperature,
    }
    for key, val in extra_info.items():
        tu.assign_non_tensor_data(data, key, val)
    return worker.update_actor(data)["metrics"]


def full(tensor):
    from torch.distributed.tensor import DTensor

    return (tensor.full_tensor() if isinstance(tensor, DTensor) else tensor).detach().float().clone()


def weights(engine) -> dict:
    """Full (unsharded) parameters by name."""
    return {name: full(param) for name, param in engine.module.named_parameters()}


def capture_gradients(engine) -> dict:
    """The gradients the optimizer steps with (after verl's clipping), by name, and the number of
    optimizer steps (key ``None``): an observer on the engine's optimizer
    (``Optimizer.register_step_pre_hook``). verl zeroes the gradients when train mode exits
    (``EngineTrainModeCtx.__exit__``, engine/fsdp/transformer_impl.py l. 1135-1139), so they cannot be
    read after ``update_actor``."""
    names = {id(param): name for name, param in engine.module.named_parameters()}
    captured: dict = {None: 0}

    def hook(optimizer, args, kwargs):
        captured[None] += 1
        for group in optimizer.param_groups:
            for param in group["params"]:
                captured[names[id(param)]] = full(param.grad) if param.grad is not None else None

    engine.optimizer.register_step_pre_hook(hook)
    return captured


def norm(tensors: dict) -> float:
    import torch

    return float(torch.sqrt(sum((t.double() ** 2).sum() for t in tensors.values() if t is not None)))


def metric(metrics: dict, key: str) -> list[float]:
    """One value per optimizer step (train_mini_batch appends each mini-batch's metrics)."""
    values = metrics[key]
    return [float(v) for v in (values if isinstance(values, list) else [values])]


def main(model_dir: Path, out: Path) -> None:
    cfg = compose_config(model_dir, out.parent)
    from terminal_rl.integrations.verl.driver import PLUGIN, apply_environment

    apply_environment({"VERL_USE_EXTERNAL_MODULES": PLUGIN, **{k: str(v) for k, v in cfg.hardware.env.items()}})

    import torch
    from transformers import AutoTokenizer
    from verl.workers.engine_workers import ActorRolloutRefWorker

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    actor_cfg = cfg.actor_rollout_ref.actor
    worker = ActorRolloutRefWorker(cfg.actor_rollout_ref, role="actor")
    worker.init_model()
    temperature = cfg.actor_rollout_ref.rollout.temperature
    loss_fn = worker.actor.loss_fn
    report = {
        "config": {
            "loss_mode": loss_fn.keywords["config"].policy_loss.loss_mode,
            "loss_fn": f"{loss_fn.func.__module__}.{loss_fn.func.__name__}",
            "engine": type(worker.actor.engine).__name__,
            "strategy": actor_cfg.strategy,
            "loss_agg_mode": actor_cfg.loss_agg_mode,
            "optimizer": actor_cfg.optim.optimizer,
            "lr": actor_cfg.optim.lr,
            "clip_grad": actor_cfg.optim.clip_grad,
            "micro_batch_size": actor_cfg.ppo_micro_batch_size_per_gpu,
            "temperature": temperature,
            # FSDP's param dtype as verl's engine took it (transformer_impl.py l. 403): fp32
            # means no autocast (l. 1559-1563).
            "autocast_dtype": str(worker.actor.engine._autocast_dtype),
        },
        "scenarios": {},
    }
    initial, steps, grads = None, {}, {}
    for scenario in ("main", "swapped", "masked", "leak"):
        worker.actor.reset()  # the initial weights again, a fresh optimizer
        engine = worker.actor.engine
        start = weights(engine)
        if initial is None:
            initial = start
        captured = capture_gradients(engine)
        batch = rows(tokenizer, scenario)
        before = response_log_probs(worker, batch, temperature)
        metrics = update(worker, cfg, batch, before)
        after = response_log_probs(worker, batch, temperature)
        optimizer_steps = captured.pop(None)
        grads[scenario] = captured
        steps[scenario] = {k: w - initial[k] for k, w in weights(engine).items()}
        report["scenarios"][scenario] = {
            "loss_tokens": [sum(row["mask"]) for row in batch],
            "response_tokens": [len(row["mask"]) for row in batch],
            "before": loss_token_sums(before, batch),
            "after": loss_token_sums(after, batch),
            "optimizer_steps": optimizer_steps,
            "same_start": max((start[k] - initial[k]).abs().max().item() for k in initial) == 0.0,
            "gradients": [len(captured), sum(g is not None for g in captured.values()), len(initial)],
            "clipped_grad_norm": norm(captured),
            **{
                name: metric(metrics, key)
                for name, key in (
                    ("pg_loss", "actor/pg_loss"),
                    ("ppo_kl", "actor/ppo_kl"),
                    ("pg_clipfrac", "actor/pg_clipfrac"),
                    ("grad_norm", "grad_norm"),
                )
            },
        }
    main_grads, main_step = grads["main"], steps["main"]
    for scenario in ("swapped", "masked", "leak"):
        both = [k for k, g in grads[scenario].items() if g is not None and main_grads.get(k) is not None]
        report["scenarios"][scenario]["vs_main"] = {  # relative to main's norms
            "grad_diff_norm": norm({k: grads[scenario][k] - main_grads[k] for k in both}) / norm(main_grads),
            "grad_sum_norm": norm({k: grads[scenario][k] + main_grads[k] for k in both}) / norm(main_grads),
            "step_diff_norm": norm({k: w - main_step[k] for k, w in steps[scenario].items()}) / norm(main_step),
        }
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
