"""The protocol interface shared by every action format."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from terminal_rl.agent.actions import ActionResult, ParseResult

PROMPTS = Path(__file__).parent / "prompts"
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Drop ``<think>`` blocks (an unclosed one runs to the end of the text)."""
    return _THINK.sub("", text)


class ActionProtocol(ABC):
    name: ClassVar[str]
    # The prompt file is prompts/<name>.<prompt_version>.md; bump the version to change it.
    prompt_version: ClassVar[str] = "v1"
    # Whether actions go to the keystroke terminal; its screen is then part of the first message.
    uses_terminal: ClassVar[bool] = False

    @property
    def prompt_id(self) -> str:
        return f"{self.name}.{self.prompt_version}"

    def prompt_text(self) -> str:
        return (PROMPTS / f"{self.prompt_id}.md").read_text(encoding="utf-8")

    def initial_messages(self, instruction: str, terminal_state: str = "") -> list[dict[str, str]]:
        """System prompt from the file, the task's instruction as the first user message."""
        return [
            {"role": "system", "content": self.prompt_text().rstrip("\n")},
            {"role": "user", "content": instruction},
        ]

    @abstractmethod
    def parse(self, text: str) -> ParseResult:
        """The model's whole turn -> actions, or feedback saying exactly what is wrong."""

    @abstractmethod
    def render(self, results: list[ActionResult], skipped: int) -> str:
        """Results of the turn's actions -> the observation the model sees next."""
