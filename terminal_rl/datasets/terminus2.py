"""External multi-turn SFT data in the Terminus-2 format (e.g. OpenThoughts-Agent-v1-SFT, what seed 002
warmed up on) converted to SFT records of our ``terminus_json`` protocol.

A Terminus-2 trace is a conversation: the first user message holds the instructions, the task and the
terminal state; every assistant message is one JSON action (analysis, plan, commands, task_complete);
every later user message is the terminal's new output. That is our ``terminus_json`` protocol's
conversation (``terminal_rl/agent/protocols/terminus_json.py``), so a trace keeps its messages; each
assistant turn must parse under our protocol (a model trained on a turn our parser rejects would
learn a format evaluation scores as an error), and the ids and masks are rendered through the same
token history as training (``terminal_rl.agent.tokens.replay``).
Rows: JSON lines or parquet with ``conversations`` as ``[{role, content}]`` or ShareGPT's
``[{from, value}]``.
"""

from __future__ import annotations

import json
from pathlib import Path

from terminal_rl.agent.protocols.terminus_json import TerminusJsonProtocol
from terminal_rl.agent.tokens import ChatTokenizer, replay
from terminal_rl.datasets.records import sample_records, token_rows

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "gpt": "assistant", "system": "system"}


def read_rows(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def trace_messages(row: dict) -> list[dict[str, str]]:
    """The trace's chat messages; ValueError naming what is wrong with it."""
    conversation = row.get("conversations") or row.get("messages")
    if not isinstance(conversation, list) or not conversation:
        raise ValueError("no 'conversations' list")
    messages = []
    for number, message in enumerate(conversation, start=1):
        role = ROLES.get(str(message.get("role", message.get("from", ""))).lower())
        content = message.get("content", message.get("value"))
        if role is None or not isinstance(content, str):
            raise ValueError(f"message {number}: needs a role (user/assistant/system or human/gpt) and text")
        messages.append({"role": role, "content": content})
    return messages


def unparsable_turn(messages: list[dict[str, str]]) -> str | None:
    """Why the first assistant turn our protocol cannot parse fails, or None."""
    protocol = TerminusJsonProtocol()
    for number, message in enumerate((m for m in messages if m["role"] == "assistant"), start=1):
        error = protocol.parse(message["content"]).error
        if error:
            return f"assistant turn {number}: {error}"
    return None


def convert(path: Path, chat: ChatTokenizer, history: str) -> tuple[list[dict], list[dict]]:
    """(SFT records, rejected traces with their reason) of the Terminus-2 file at ``path``."""
    records, rejected = [], []
    for line, row in enumerate(read_rows(path), start=1):
        trace_id = f"{path.name}#{line}"
        try:
            messages = trace_messages(row)
            reason = unparsable_turn(messages)
            if reason is None:
                samples = replay(history, chat, messages).samples
        except ValueError as error:
            reason = str(error)
        if reason:
            rejected.append({"episode_id": trace_id, "reason": reason})
            continue
        fields = {
            "episode_id": trace_id,
            "task_id": str(row.get("task") or row.get("trial_name") or trace_id),
            "content_hash": "",
            "run_id": str(row.get("run_id") or ""),
            "origin": "terminus2",
            "step": -1,
            "split": "external",
            "policy": str(row.get("model") or ""),
            "protocol": "terminus_json",
            "termination": "",
            "score": None,
            "reward": None,
            "components": {},
        }
        rows = token_rows((s.prompt_ids, s.response_ids, s.response_mask) for s in samples)
        records += sample_records(fields, history, messages, rows)
    return records, rejected
