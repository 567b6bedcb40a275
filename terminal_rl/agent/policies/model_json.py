"""The one reader of a model's JSON answer, for every caller that asks a model for one object (the
judge's verdict, the task generator's stages, the PRM step scores).

Real models do not answer in bare JSON: a Qwen3 model served without a reasoning parser writes
``<think>…</think>`` first, others wrap the object in prose or a fenced block, repeat it, leave a
trailing comma, or run out of tokens mid-object. This reads what a careful person would: reasoning
blocks are dropped, the one JSON object is found wherever it stands, a trailing comma is forgiven;
anything else raises ``MalformedReply`` with a message fit for the one correction round (pure).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Reasoning blocks some servers leave in the content (Qwen3 and DeepSeek-R1 style, Claude-style tags).
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_REASONING = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class MalformedReply(ValueError):
    """The reply is not the JSON object asked for; the message says what is wrong."""


def answer_text(text: str) -> str:
    """The reply less its reasoning blocks. A reasoning block never closed means the model ran out of
    tokens while thinking: there is no answer to read."""
    answer = _REASONING.sub("", text)
    if _OPEN_REASONING.search(answer):
        raise MalformedReply("the reply is only reasoning, cut off before the answer (no closing </think>)")
    return answer.strip()


def reply_object(text: str) -> dict[str, Any]:
    """The one JSON object in ``text``: bare, fenced, or inside prose, after its reasoning blocks.

    Raises:
        MalformedReply: no object, several different objects, an object cut off, or one that does
            not parse even with its trailing commas forgiven.
    """
    answer = answer_text(text)
    if not answer:
        raise MalformedReply("the reply is empty")
    spans, cut_off = _brace_spans(answer)
    objects, errors = [], []
    for span in spans:
        try:
            value = json.loads(span)
        except json.JSONDecodeError:
            try:
                value = json.loads(_TRAILING_COMMA.sub(r"\1", span))
            except json.JSONDecodeError as error:
                if '"' in span and ":" in span:  # meant as JSON, not prose such as {placeholder}
                    errors.append(f"{error.msg} at column {error.colno}")
                continue
        if isinstance(value, dict):
            objects.append(value)
    distinct = {json.dumps(o, sort_keys=True): o for o in objects}
    if len(distinct) > 1:
        raise MalformedReply(f"the reply holds {len(distinct)} different JSON objects; answer with exactly one")
    if distinct:
        return next(iter(distinct.values()))
    if cut_off:
        raise MalformedReply("the JSON object is cut off before its end (the reply ran out of tokens?)")
    if errors:
        raise MalformedReply(f"the reply is not valid JSON ({errors[0]})")
    raise MalformedReply("the reply holds no JSON object")


def _brace_spans(text: str) -> tuple[list[str], bool]:
    """Each top-level ``{…}`` of ``text``, braces inside JSON strings not counted, and whether the
    last one never closes (an object cut off)."""
    spans, depth, start, in_string, escaped = [], 0, 0, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and depth:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
    return spans, depth > 0
