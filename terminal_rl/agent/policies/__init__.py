"""Policies: drivers that produce the model's turns for an episode (see ``base.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from terminal_rl.agent.policies.base import Policy
from terminal_rl.agent.policies.scripted import ScriptedPolicy
from terminal_rl.config import project_path, to_dataclass


def make_policy(node: DictConfig, history: str = "append") -> Policy:
    """The policy the ``policy`` config group describes (``kind``: litellm | token | scripted);
    token-level policies render turns in the agent's ``history`` mode.

    litellm and transformers are imported only by the policies that need them (slow imports).
    """
    settings = {k: v for k, v in node.items() if k != "kind"}
    if node.kind == "litellm":
        from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy

        return LiteLLMPolicy(to_dataclass(settings, LiteLLMConfig))
    if node.kind == "token":
        from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig

        return TokenPolicy(to_dataclass(settings, TokenPolicyConfig), history)
    if node.kind == "scripted":
        return ScriptedPolicy(json.loads(Path(project_path(node.script)).read_text(encoding="utf-8")))
    raise ValueError(f"policy.kind={node.kind!r} is not one of litellm, token, scripted (oracle is run by evaluate)")
