"""Dataset records: an episode's messages with its token ids and loss masks exactly as trained.

A rollout brings the ids and masks the agent loop trained (``metadata.samples``); an evaluation
episode (a text policy: the oracle, a scripted or API model) is rendered through the same token
history as training (``terminal_rl.agent.tokens.replay``) in the run's ``agent.history`` mode. One
sample is one sequence: prompt then response, the loss mask 1 on the model's own tokens only.
"""

from __future__ import annotations

from terminal_rl.agent.context import ContextConfig, shown_turns
from terminal_rl.agent.tokens import ChatTokenizer, as_seen, prompt_digest, replay_shown
from terminal_rl.datasets.sources import Episode


def training_samples(episode: Episode, chat: ChatTokenizer, history: str) -> list[dict[str, list[int]]]:
    """[{input_ids, loss_mask}] per training sample of the episode (prompt mask 0, model tokens 1), from
    what the model was shown (``agent.context`` may have elided or summarised the transcript)."""
    stored = episode.trajectory.metadata.get("samples")
    if not stored:
        return token_rows(
            (s.prompt_ids, s.response_ids, s.response_mask)
            for s in replay_shown(history, chat, seen_turns(episode)).samples
        )
    seen = seen_turns(episode) if any("prompt_ids" not in s for s in stored) else []
    return token_rows((_logged_prompt(s, episode, chat, seen), s["response_ids"], s["response_mask"]) for s in stored)


def seen_turns(episode: Episode) -> list[tuple[list[dict], str]]:
    """(what the model was shown, its reply) per model turn of the episode, summaries included, under
    the context policy it ran with (recorded by the episode driver; none for older records)."""
    trajectory = episode.trajectory
    config = ContextConfig(**trajectory.metadata.get("context", {}).get("config", {}))
    head = next(i for i, m in enumerate(trajectory.messages) if m["role"] == "assistant")
    return shown_turns(config, trajectory.messages, trajectory.turns, head)


def _logged_prompt(sample: dict, episode: Episode, chat: ChatTokenizer, seen: list) -> list[int]:
    """A logged sample's prompt ids: as logged, or (per_turn, which logs a digest) rebuilt from what the
    model was shown at that turn (``seen``: ``seen_turns``) and checked against the logged digest."""
    if "prompt_ids" in sample:
        return sample["prompt_ids"]
    shown, _ = seen[sample["turn"]]
    ids = chat.prompt_ids(as_seen(shown))
    if prompt_digest(ids) != sample["prompt_sha256"]:
        raise ValueError(
            f"{episode.file}#{episode.line}: turn {sample['turn']}'s prompt rebuilt from its messages is not the one "
            "trained (another tokenizer, chat template, enable_thinking or agent.context than the run's?)"
        )
    return ids


def token_rows(samples) -> list[dict[str, list[int]]]:
    """(prompt ids, response ids, response mask) triples as one sequence each, prompt masked out."""
    return [
        {"input_ids": list(prompt) + list(response), "loss_mask": [0] * len(prompt) + list(mask)}
        for prompt, response, mask in samples
    ]


def sample_records(fields: dict, history: str, messages: list[dict], rows: list[dict]) -> list[dict]:
    """One SFT record per token row: where it came from (``fields``), its messages, its ids and mask."""
    return [
        {**fields, "history": history, "sample": i, "samples": len(rows), "messages": messages, **row}
        for i, row in enumerate(rows)
    ]


def describe(episode: Episode) -> dict:
    """What every record says about where an episode came from and how it scored."""
    trajectory = episode.trajectory
    return {
        "episode_id": episode.id,
        "task_id": trajectory.task_id,
        "content_hash": trajectory.content_hash,
        "run_id": episode.run_id,
        "origin": episode.origin,
        "step": episode.step,
        "split": episode.split,
        "policy": trajectory.policy,
        "protocol": trajectory.protocol,
        "termination": trajectory.termination,
        "score": episode.score,
        "reward": episode.reward,
        "components": {k: float(v) for k, v in sorted(episode.components.items()) if v is not None},
    }


def sft_records(episode: Episode, chat: ChatTokenizer, history: str) -> list[dict]:
    """One record per training sample (``append``: one per episode; ``per_turn``: one per turn)."""
    return sample_records(
        describe(episode),
        episode.trajectory.metadata.get("history", history),
        episode.trajectory.messages,
        training_samples(episode, chat, history),
    )


def dpo_record(chosen: Episode, rejected: Episode, chat: ChatTokenizer, history: str) -> dict:
    first = next(i for i, m in enumerate(chosen.trajectory.messages) if m["role"] == "assistant")
    return {
        "task_id": chosen.task_id,
        "content_hash": chosen.trajectory.content_hash,
        "step": chosen.step,
        "prompt": chosen.trajectory.messages[:first],
        "chosen": chosen.trajectory.messages,
        "rejected": rejected.trajectory.messages,
        "chosen_samples": training_samples(chosen, chat, history),
        "rejected_samples": training_samples(rejected, chat, history),
        "chosen_meta": describe(chosen),
        "rejected_meta": describe(rejected),
    }
