"""Context management (``agent.context``): what the model is shown of an episode that would outgrow
its context window. Pure: a ``ContextView`` turns the episode's transcript into the messages of the
next turn; the episode driver (``runner.py``) and the token history (``tokens.py``: a rewrite starts
a new segment in append mode) do the rest.

* ``none``: the whole transcript (the episode ends as ``context_exhausted`` when it is full).
* ``elide``: observations older than ``keep_turns`` turns are replaced by a stub naming the command
  and the lines elided (SWE-agent's rule). The boundary moves in blocks of ``block_turns`` turns, so
  between two moves the messages only grow and the model server's prefix cache hits.
* ``summarize``: when the context reaches ``summarize_at`` of ``agent.max_context_tokens``, the model
  is asked (a fixed, versioned prompt, ``prompts/summary_request.<version>.md``) to summarise its
  progress; its summary is an ordinary model turn (trained with the trajectory's advantage), and the
  episode continues from [system, task, summary, hand-off] (Terminus-2's hand-off).

The transcript (``Trajectory.messages``) keeps what happened, whole: elided observations in full,
the summary request and the summary where they were asked and written. ``shown_turns`` rebuilds from
it what the model was shown at each turn, for datasets built from text policies' episodes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

PROMPTS = Path(__file__).parent / "prompts"


class ContextPolicy(StrEnum):
    NONE = "none"
    ELIDE = "elide"
    SUMMARIZE = "summarize"


@dataclass(frozen=True)
class ContextConfig:
    """The ``agent/context`` config group."""

    policy: str = ContextPolicy.NONE
    # elide: the last keep_turns turns keep their observations; the boundary moves every block_turns.
    keep_turns: int = 4
    block_turns: int = 4
    # summarize: at this fraction of agent.max_context_tokens; the prompt's version; the summary's
    # token cap; at most this many summaries an episode.
    summarize_at: float = 0.7
    summary_prompt: str = "v1"
    summary_max_tokens: int = 1024
    max_summaries: int = 8

    def __post_init__(self):
        if self.policy not in {p.value for p in ContextPolicy}:
            raise ValueError(f"agent.context.policy={self.policy!r} is not one of {[p.value for p in ContextPolicy]}")
        if self.keep_turns < 1 or self.block_turns < 1:
            raise ValueError("agent.context.keep_turns and block_turns must be at least 1")
        if not 0 < self.summarize_at < 1:
            raise ValueError(f"agent.context.summarize_at={self.summarize_at} must be between 0 and 1")


@lru_cache(maxsize=8)
def prompt(name: str, version: str) -> str:
    return (PROMPTS / f"{name}.{version}.md").read_text(encoding="utf-8").strip()


def elision_stub(observation: str, actions: list[dict]) -> str:
    """What an elided observation becomes: the commands (bash ``cmd``, terminal keystrokes; else the
    tools' names) and how many lines were elided."""
    commands = [_first_line(a["args"].get("cmd") or a["args"].get("keystrokes") or "") for a in actions]
    what = ", ".join(f"`{c}`" for c in commands if c) or ", ".join(a.get("tool", "?") for a in actions)
    return f"[output of {what or 'an unparsed reply'} elided: {len(observation.splitlines())} lines]"


def _first_line(command: str) -> str:
    lines = command.strip().splitlines()
    return lines[0][:80] if lines else ""


def elided_observations(turns: list, elided_turns: int) -> list[tuple[str, str]]:
    """(observation, its stub) of the first ``elided_turns`` turns (``Turn`` records) that observed one."""
    return [
        (turn.observation, elision_stub(turn.observation, turn.actions))
        for turn in turns[:elided_turns]
        if turn.observation is not None
    ]


def elision_boundary(turns_observed: int, keep_turns: int, block_turns: int) -> int:
    """How many leading turns have their observation elided (a multiple of ``block_turns``)."""
    return max(0, (turns_observed - keep_turns) // block_turns * block_turns)


class ContextView:
    """The messages the model is shown next, for one episode. ``initial``: the system and task
    messages; ``observe`` after each model turn; ``summary_due`` / ``summary_request`` / ``handoff``
    around a summary (summarize)."""

    def __init__(self, config: ContextConfig, initial: list[dict[str, str]]):
        self.config = config
        self.head = list(initial)
        # Since the start or the last hand-off: (assistant message, observation message, actions) per turn.
        self._turns: list[tuple[dict, dict | None, list[dict]]] = []
        self._after_handoff: list[dict[str, str]] = []
        self.summaries = 0
        self.segments = 1
        self._boundary = 0

    @property
    def messages(self) -> list[dict[str, str]]:
        shown = [*self.head, *self._after_handoff]
        for number, (reply, observation, actions) in enumerate(self._turns):
            shown.append(reply)
            if observation is not None:
                if number < self._boundary:
                    observation = {**observation, "content": elision_stub(observation["content"], actions)}
                shown.append(observation)
        return shown

    @property
    def elided_turns(self) -> int:
        return self._boundary

    def record(self) -> dict:
        """``Trajectory.metadata["context"]``: the config (what was shown is rebuilt from it and the
        transcript, ``shown_turns``) and the counts so far."""
        return {
            "config": asdict(self.config),
            "segments": self.segments,
            "summaries": self.summaries,
            "elided_turns": self.elided_turns,
        }

    def observe(self, reply: str, observation: dict[str, str] | None, actions: list[dict]) -> None:
        """The model's turn and what it observed after it (None: the episode ended)."""
        self._turns.append(({"role": "assistant", "content": reply}, observation, actions))
        if self.config.policy == ContextPolicy.ELIDE:
            observed = sum(1 for _, seen, _ in self._turns if seen is not None)
            boundary = elision_boundary(observed, self.config.keep_turns, self.config.block_turns)
            if boundary != self._boundary:
                self._boundary, self.segments = boundary, self.segments + 1

    def summary_due(self, context_tokens: int, max_context_tokens: int) -> bool:
        config = self.config
        return (
            config.policy == ContextPolicy.SUMMARIZE
            and self.summaries < config.max_summaries
            and bool(self._turns)
            and context_tokens >= config.summarize_at * max_context_tokens
        )

    def summary_request(self) -> dict[str, str]:
        return {"role": "user", "content": prompt("summary_request", self.config.summary_prompt)}

    def handoff(self, summary: str) -> None:
        """Continue from [system, task, summary, hand-off] (the summary as the model wrote it)."""
        self._turns = []
        self._after_handoff = [
            {"role": "assistant", "content": summary},
            {"role": "user", "content": prompt("summary_handoff", self.config.summary_prompt)},
        ]
        self.summaries += 1
        self.segments += 1


def shown_turns(
    config: ContextConfig, messages: list[dict[str, str]], turns: list, head: int
) -> list[tuple[list[dict[str, str]], str]]:
    """(what the model was shown, what it replied) for every model turn of a recorded transcript,
    summaries included: the ``ContextView`` of the episode driven again over it. ``turns``: the
    episode's ``Turn`` records (their actions name the elided commands); ``head``: the initial messages."""
    view = ContextView(config, messages[:head])
    request = view.summary_request()["content"] if config.policy == ContextPolicy.SUMMARIZE else None
    shown, index, turn = [], head, 0
    while index < len(messages):
        message = messages[index]
        if message["role"] == "user" and message["content"] == request:  # a summary: asked, then written
            summary = messages[index + 1]["content"]
            shown.append(([*view.messages, message], summary))
            view.handoff(summary)
            index += 2
            continue
        if message["role"] != "assistant":
            raise ValueError(f"message {index} of the transcript is a {message['role']} message where a turn was due")
        following = messages[index + 1] if index + 1 < len(messages) else None
        observed = following is not None and following["role"] == "user" and following["content"] != request
        observation = following if observed else None
        shown.append((view.messages, message["content"]))
        view.observe(message["content"], observation, turns[turn].actions if turn < len(turns) else [])
        index, turn = index + (2 if observation is not None else 1), turn + 1
    return shown
