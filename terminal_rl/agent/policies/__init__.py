"""Policies: drivers that produce the model's turns for an episode (see ``base.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from terminal_rl.agent.policies.base import Policy
from terminal_rl.agent.policies.scripted import ScriptedPolicy
from terminal_rl.config import project_path, to_dataclass

if TYPE_CHECKING:  # agent.config imports the tokens module, which imports this package's base
    from terminal_rl.agent.config import AgentConfig


def make_policy(node: DictConfig, agent: AgentConfig) -> Policy:
    """The policy the ``policy`` config group describes (``kind``: litellm | token | scripted).
    Model policies apply the agent's context budget (``agent.sequence_limits``) by its history mode's
    rule, as training does; token-level ones also render turns in that mode.

    litellm and transformers are imported only by the policies that need them (slow imports).
    """
    settings = {k: v for k, v in node.items() if k != "kind"}
    if node.kind == "litellm":
        from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy

        return LiteLLMPolicy(to_dataclass(settings, LiteLLMConfig), agent.history, agent.sequence_limits)
    if node.kind == "token":
        from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig

        return TokenPolicy(to_dataclass(settings, TokenPolicyConfig), agent.history, agent.sequence_limits)
    if node.kind == "scripted":
        return ScriptedPolicy(json.loads(Path(project_path(node.script)).read_text(encoding="utf-8")))
    raise ValueError(f"policy.kind={node.kind!r} is not one of litellm, token, scripted (oracle is run by evaluate)")
