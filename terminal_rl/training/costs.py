"""What a run costs before it starts (pure): the rows and tokens the actor trains per step in each
history mode, and the disk its kept checkpoints take. Preflight prints both; the rehearsal
(``experiment=rehearsal``) checks the token figure against a run."""

from __future__ import annotations

from dataclasses import dataclass

from terminal_rl.agent.policies.base import ContextExhausted
from terminal_rl.agent.tokens import History, SequenceLimits, turn_room


@dataclass(frozen=True)
class EpisodeShape:
    """The episode an estimate assumes (tokens): a first prompt, then model turns each answered by an
    observation, until the context budget or ``max_turns`` ends it (``cost_estimate`` in conf/train.yaml)."""

    first_prompt_tokens: int
    turn_tokens: int
    observation_tokens: int


@dataclass(frozen=True)
class EpisodeCost:
    # Model turns the episode runs, the training rows it gives and their tokens (prompt + response:
    # what the actor's forward and backward passes process).
    turns: int
    rows: int
    tokens: int


def episode_cost(
    history: str, shape: EpisodeShape, limits: SequenceLimits, max_turns: int, max_tokens_per_turn: int
) -> EpisodeCost:
    """Walk one episode of ``shape`` under the history mode's own limit rule (``turn_room``), each
    turn also capped at ``max_tokens_per_turn``."""
    first, prompt, rows, written_total = shape.first_prompt_tokens, shape.first_prompt_tokens, [], 0
    ended_by_budget = False
    while len(rows) < max_turns:
        try:
            room = turn_room(history, limits, first, prompt)
        except ContextExhausted:
            ended_by_budget = True
            break
        written = min(shape.turn_tokens, max_tokens_per_turn, *(() if room is None else (room,)))
        rows.append(prompt + written)
        written_total += written
        prompt += written + shape.observation_tokens
    turns = len(rows)
    if history == History.PER_TURN:
        return EpisodeCost(turns, turns, sum(rows))
    # append: one row; the observation the budget refused is in it too, cut at the response length.
    response = written_total + shape.observation_tokens * (max(turns - 1, 0) + ended_by_budget)
    if limits.response_tokens is not None:
        response = min(response, limits.response_tokens)
    return EpisodeCost(turns, 1, first + response)


def checkpoint_gb(parameters: float, trained: float) -> float:
    """One verl FSDP checkpoint (model, optimizer, extra) in GB: fp32 weights (4 bytes a parameter)
    and Adam's two fp32 moments for every trained one (8 bytes): ~12 bytes a parameter for full
    fine-tuning, ~100 GB for an 8B model."""
    return (4 * parameters + 8 * trained) / 1e9
