"""Build the SFT, DPO and PRM datasets of one or more runs (see the package docstring)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from terminal_rl.agent.tokens import ChatTokenizer, load_tokenizer
from terminal_rl.datasets.forged import flag_forged
from terminal_rl.datasets.prm import StepScorer
from terminal_rl.datasets.records import dpo_record, sft_records
from terminal_rl.datasets.selection import select_dpo, select_prm, select_sft
from terminal_rl.datasets.sources import Episode, results_episodes, run_episodes
from terminal_rl.datasets.writer import remove_dataset, write_dataset

SFT_FIELDS = {
    "messages": "the episode's chat messages (system, task, every model turn and observation)",
    "input_ids": "token ids of one training sample: its prompt, then its response, exactly as trained",
    "loss_mask": "1 on the model's own tokens, 0 on prompt and observation tokens (same length as input_ids)",
    "history / sample / samples": "the agent.history mode, and which of the episode's samples this is",
    "task_id, content_hash, run_id, origin, step, split, policy": "where the episode came from",
    "score, reward, components": "test score, trained reward and its components",
}


@dataclass(frozen=True)
class BuildSettings:
    runs: list[Path]
    results_files: list[Path]
    out_dir: Path
    tokenizer: str
    enable_thinking: bool
    history: str
    sft_min_score: float
    dpo_chosen_min: float
    dpo_rejected_max: float
    dpo_max_pairs: int
    forged_filter: bool
    # At most this many episodes are scored step by step (PRM), spread over tasks.
    prm_max_episodes: int


def build(settings: BuildSettings, prm: StepScorer | None = None) -> dict:
    """Write the datasets and ``removed.jsonl``; returns the summary (also ``summary.json``).
    ``prm``: the judge's step scorer, or None (no PRM dataset)."""
    missing = [str(run_dir) for run_dir in settings.runs if not run_dir.is_dir()]
    if missing:
        raise FileNotFoundError(f"run directories {missing} do not exist")
    episodes = [e for run_dir in settings.runs for e in run_episodes(run_dir)] + results_episodes(
        settings.results_files
    )
    chat = ChatTokenizer(load_tokenizer(settings.tokenizer), settings.enable_thinking)
    flags = flag_forged(episodes) if settings.forged_filter else []
    removed = {flag.episode.id for flag in flags}
    # Oracle episodes (the solution script run as the agent) have no model turns: facts, not samples.
    with_turns = [e for e in episodes if e.trajectory.turns]
    sft = select_sft(with_turns, settings.sft_min_score, removed)
    pairs = select_dpo(with_turns, settings.dpo_chosen_min, settings.dpo_rejected_max, settings.dpo_max_pairs, removed)
    runs = [run.name for run in settings.runs]
    out = settings.out_dir
    sft_rows = [row for episode in sft for row in sft_records(episode, chat, settings.history)]
    write_dataset(
        out,
        "sft",
        sft_rows,
        "Per task, the best passing episode as supervised fine-tuning samples.",
        f"test score >= {settings.sft_min_score}; latest step, then widest group reward spread, then reward; "
        "forged-fixture episodes removed",
        runs,
        SFT_FIELDS,
    )
    dpo_rows = [dpo_record(chosen, rejected, chat, settings.history) for chosen, rejected in pairs]
    write_dataset(
        out,
        "dpo",
        dpo_rows,
        "Preference pairs of the same task and step.",
        f"chosen score >= {settings.dpo_chosen_min}, rejected < {settings.dpo_rejected_max}, at most "
        f"{settings.dpo_max_pairs} pairs per task and step; forged-fixture episodes never chosen",
        runs,
        {
            "prompt / chosen / rejected": "messages",
            "chosen_samples / rejected_samples": "[{input_ids, loss_mask}] as in sft",
            "chosen_meta / rejected_meta": "as the sft record fields",
        },
    )
    prm_episodes = select_prm(episodes, settings.prm_max_episodes) if prm else []
    prm_rows, prm_failures = asyncio.run(_prm_rows(prm, prm_episodes)) if prm else ([], {})
    remove_dataset(out, "prm")
    if prm:
        write_dataset(
            out,
            "prm",
            prm_rows,
            "Per-step scores (1-5) of episodes from the judge's step rubric.",
            f"at most {settings.prm_max_episodes} episodes with turns, spread over tasks, failing ones first; "
            "divergence: first step scored low in a failing episode",
            runs,
            {
                "prefix": "the model's earlier turns",
                "action / observation": "this step",
                "step_score / step_reason": "the judge's grade",
                "divergence_step": "first low-scored step of a failing episode (null otherwise)",
            },
        )
    with (out / "removed.jsonl").open("w", encoding="utf-8") as handle:
        for flag in flags:
            handle.write(
                json.dumps(
                    {
                        "episode_id": flag.episode.id,
                        "task_id": flag.episode.task_id,
                        "reason": flag.reason,
                        "files": flag.files,
                        "score": flag.episode.score,
                    }
                )
                + "\n"
            )
    summary = {
        "episodes": len(episodes),
        "by_origin": dict(Counter(e.origin for e in episodes)),
        "sft_records": len(sft_rows),
        "sft_tasks": len(sft),
        "dpo_pairs": len(dpo_rows),
        "prm_records": len(prm_rows),
        "prm_episodes": len(prm_episodes),
        "prm_failures": prm_failures,
        "prm_usage": prm.usage() if prm else {},
        "removed": len(flags),
        "out_dir": str(out),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


async def _prm_rows(prm: StepScorer, episodes: list[Episode]) -> tuple[list[dict], dict[str, str]]:
    """PRM records of the episodes (forged ones too: their steps deserve low scores), and episode id ->
    why the judge gave none."""
    results = await asyncio.gather(*(prm.records(e) for e in episodes))
    rows = [row for result in results if isinstance(result, list) for row in result]
    return rows, {e.id: result for e, result in zip(episodes, results) if isinstance(result, str)}
