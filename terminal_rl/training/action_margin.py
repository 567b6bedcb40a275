"""A continuous learning signal that needs no sandbox: how much more likely a model makes the right
next action than the wrong one at a fixed decision point, teacher-forced.

A decision point is a played conversation whose last model turn is the wrong action (e.g. ``<done/>``
after a write failed because its folder is missing); the right action is another reply in its place
(``<command>mkdir -p /app/out</command>``). Both replies are rendered through the same token history
as training (``agent.tokens.replay``), so the margin is measured on exactly the tokens the model
trains and samples. Pass rates move in steps of one task; the margin moves with every update.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from terminal_rl.agent.tokens import ChatTokenizer, replay


@dataclass(frozen=True)
class Decision:
    """Token ids: what both actions follow, and each action's tokens from where they first differ."""

    prefix: list[int]
    right: list[int]
    wrong: list[int]


def decision(messages: list[dict[str, str]], right_reply: str, chat: ChatTokenizer, history: str) -> Decision:
    """The decision at the last assistant message of ``messages`` (the wrong action) against
    ``right_reply`` in its place. Tokens the two replies share are in the prefix: they add the same
    log-probability to both actions, so the margin is unchanged."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None:
        raise ValueError("a decision needs a conversation whose last model turn is the wrong action")
    right_messages = [*messages[:last], {"role": "assistant", "content": right_reply}]
    wrong_ids, right_ids = (_sequence(replay(history, chat, m)) for m in (messages[: last + 1], right_messages))
    common = next((i for i, (a, b) in enumerate(zip(wrong_ids, right_ids)) if a != b), None)
    if common is None:
        raise ValueError(f"the right reply {right_reply!r} renders as the conversation's own last turn")
    return Decision(wrong_ids[:common], right_ids[common:], wrong_ids[common:])


def margins(model, decisions: list[Decision]) -> list[float]:
    """log p(right | prefix) - log p(wrong | prefix) per decision (nats), each action's tokens summed,
    at temperature 1 (as rollouts sample). ``model``: a causal LM returning ``logits`` (batch, length, vocab)."""
    with torch.no_grad():
        return [_log_prob(model, d.prefix, d.right) - _log_prob(model, d.prefix, d.wrong) for d in decisions]


def right_log_probs(model, decisions: list[Decision]) -> list[float]:
    """log p(right | prefix) per decision (nats), at temperature 1: how often sampling takes the right
    action there, whatever else competes with it. (The prefix may end inside the model turn, on tokens
    both actions share; their probability, near 1 for a tag every turn opens with, is not counted.)"""
    with torch.no_grad():
        return [_log_prob(model, d.prefix, d.right) for d in decisions]


def _log_prob(model, prefix: list[int], continuation: list[int]) -> float:
    ids = torch.tensor([prefix + continuation])
    logits = model(input_ids=ids).logits[0, len(prefix) - 1 : -1].float()
    return float(logits.log_softmax(-1).gather(1, torch.tensor(continuation)[:, None]).sum())


def _sequence(history) -> list[int]:
    """The conversation's last sample as one sequence (append history: the whole episode)."""
    sample = history.samples[-1]
    return sample.prompt_ids + sample.response_ids
