"""LoRA settings (``model.lora``) and the parameter count they train, from the architecture figures
alone (pure), so preflight can tell a LoRA run from a full fine-tune before anything starts.

A Qwen3 decoder layer has seven linear projections, which peft's ``all-linear`` selects (it leaves
out the LM head); LoRA of rank r on a projection of shape (in, out) trains r * (in + out) weights.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoRA:
    """``model.lora`` of the config (conf/model/lora/)."""

    rank: int
    alpha: int
    # "all-linear" or a list of projection names.
    target_modules: str | list[str]
    # The actor's learning rate under LoRA (None: the full fine-tuning rate).
    lr: float | None = None


def projections(architecture: dict) -> dict[str, tuple[int, int]]:
    """(in, out) features of each linear projection of one Qwen3 decoder layer."""
    hidden, inner = architecture["hidden_size"], architecture["intermediate_size"]
    attention = architecture["attention_heads"] * architecture["head_dim"]
    kv = architecture["kv_heads"] * architecture["head_dim"]
    return {
        "q_proj": (hidden, attention),
        "k_proj": (hidden, kv),
        "v_proj": (hidden, kv),
        "o_proj": (attention, hidden),
        "gate_proj": (hidden, inner),
        "up_proj": (hidden, inner),
        "down_proj": (inner, hidden),
    }


def unknown_modules(architecture: dict, target_modules: str | list[str]) -> list[str]:
    """Target names that match no projection (each one silently trains nothing)."""
    if target_modules == "all-linear":
        return []
    return sorted(set(target_modules) - set(projections(architecture)))


def trainable_parameters(architecture: dict, rank: int, target_modules: str | list[str]) -> int:
    """Weights LoRA trains over the whole model (0 when rank is 0)."""
    shapes = projections(architecture)
    names = shapes if target_modules == "all-linear" else [n for n in target_modules if n in shapes]
    return architecture["layers"] * rank * sum(sum(shapes[name]) for name in names)
