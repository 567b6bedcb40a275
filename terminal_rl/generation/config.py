"""The ``generator`` config group, typed: the LLM pipeline's model, sampling lists and gates."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig
from terminal_rl.config import to_dataclass
from terminal_rl.tasks.model import Limits


@dataclass(frozen=True)
class GeneratorConfig:
    llm: LiteLLMConfig
    candidates: int
    categories: list[str]
    complexities: list[str]
    personas: list[str]
    base_images: list[str]
    repair_rounds: int
    max_tokens: int
    concurrency: int
    duplicate_threshold: float
    shingle_words: int
    solve_attempts: int
    solve_concurrency: int
    difficulty_bands: dict[str, float]
    fresh_containers: int
    limits: Limits

    @classmethod
    def from_node(cls, node: DictConfig) -> GeneratorConfig:
        settings = OmegaConf.to_container(node, resolve=True)
        settings["llm"] = to_dataclass(settings["llm"], LiteLLMConfig)
        settings["limits"] = to_dataclass(settings["limits"], Limits)
        config = to_dataclass(settings, cls)
        for name in ("categories", "complexities", "personas", "base_images"):
            if not getattr(config, name):
                raise ValueError(f"generator.{name} is empty: the sampler needs at least one")
        return config
