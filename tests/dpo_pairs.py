"""A fixed preference-pair set for the DPO tests, written as `python -m terminal_rl.datasets` writes
dpo.parquet (records.py ``token_rows`` of the token history the RL agent loop builds, ``replay``)."""

from __future__ import annotations

from pathlib import Path

from terminal_rl.agent.tokens import ChatTokenizer, load_tokenizer, replay
from terminal_rl.datasets.records import token_rows
from terminal_rl.datasets.writer import write_dataset

SYSTEM = "You are a terminal agent. Act with one tool call per turn."


def episode(task: str, replies: list[str]) -> list[dict]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    for number, reply in enumerate(replies):
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": f"exit code 0 (turn {number})"},
        ]
    return messages


def samples(history) -> list[dict]:
    return token_rows((s.prompt_ids, s.response_ids, s.response_mask) for s in history.samples)


def pair_rows(chat: ChatTokenizer, history: str, pairs: int = 4) -> list[dict]:
    """``pairs`` pairs: a two-turn episode that writes the answer file (chosen) against one that gives up."""
    rows = []
    for n in range(pairs):
        task = f"Write the number {n} to /app/answer.txt."
        chosen = episode(
            task, [f"<bash>\ncmd: echo {n} > /app/answer.txt\n</bash>", "<finish>\nmessage: done\n</finish>"]
        )
        rejected = episode(task, ["<finish>\nmessage: I cannot do this.\n</finish>"])
        rows.append(
            {
                "task_id": f"write-{n}",
                "chosen_samples": samples(replay(history, chat, chosen)),
                "rejected_samples": samples(replay(history, chat, rejected)),
                "chosen_meta": {"episode_id": f"pairs/chosen#{n}"},
                "rejected_meta": {"episode_id": f"pairs/rejected#{n}"},
            }
        )
    return rows


def write_pairs(model: Path, out_dir: Path, history: str = "append") -> Path:
    chat = ChatTokenizer(load_tokenizer(str(model)), enable_thinking=False)
    return write_dataset(out_dir, "dpo", pair_rows(chat, history), "test pairs", "fixed", ["pairs"], {})
