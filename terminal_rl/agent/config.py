"""Typed view of the ``agent`` config group (``conf/agent/``): the protocol, the token history and the
episode limits, read in one place by every driver (evaluation, filtering, training)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from omegaconf import DictConfig, OmegaConf

from terminal_rl.agent.context import ContextConfig
from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.tokens import History, SequenceLimits
from terminal_rl.config import to_dataclass


@dataclass(frozen=True)
class AgentConfig:
    protocol: str
    # append | per_turn (terminal_rl/agent/tokens.py).
    history: str
    # Name under which the verl agent loop is registered.
    loop_name: str
    limits: EpisodeLimits
    # Tokens of the first prompt (system and task) the budget allows.
    max_prompt_tokens: int
    # {history: {"prompt": tokens, "response": tokens}}: one training sample's lengths by mode.
    sample_lengths: dict[str, dict[str, int]]

    @property
    def sequence_limits(self) -> SequenceLimits:
        """One sample's lengths in this agent's history mode: what training gives verl and every
        driver applies, so evaluation and training end an episode at the same turn."""
        return self.limits_for(self.history)

    def limits_for(self, history: str) -> SequenceLimits:
        """One sample's lengths in ``history`` mode."""
        lengths = self.sample_lengths[history]
        return SequenceLimits(int(lengths["prompt"]), int(lengths["response"]))

    @classmethod
    def from_node(cls, node: DictConfig | dict) -> AgentConfig:
        data = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
        limit_keys = {f.name for f in fields(EpisodeLimits)}
        limits = {k: v for k, v in data.items() if k in limit_keys}
        if "context" in limits:
            limits["context"] = to_dataclass(limits["context"], ContextConfig)
        limits = to_dataclass(limits, EpisodeLimits)
        config = to_dataclass({**{k: v for k, v in data.items() if k not in limit_keys}, "limits": limits}, cls)
        if config.history not in {h.value for h in History}:
            raise ValueError(f"agent.history={config.history!r} is not one of {[h.value for h in History]}")
        return config
