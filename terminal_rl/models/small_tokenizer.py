"""A small-vocabulary tokenizer for a tiny model: Qwen3's tokenizer retrained on one task family's texts.

``train_new_from_iterator`` keeps Qwen3's whole pipeline (its pre-tokenizer regex, byte-level BPE, so
any text still encodes), its special tokens and its chat template; only the merges are learnt anew. A
vocabulary of ~1,000 instead of 151,936 makes the LM head, which dominates a model this small, about
150 times cheaper, while our rendering (``agent/tokens.py``) and verl work unchanged.
"""

from __future__ import annotations

from pathlib import Path

from terminal_rl.tasks.model import Limits
from terminal_rl.tasks.procedural import procedural_tasks

PROMPTS = Path(__file__).resolve().parents[1] / "agent" / "protocols" / "prompts"
# Seeds and tasks per seed the corpus draws from (the learning proof trains on seed 0, holds out seed 1).
CORPUS_SEEDS = range(4)
CORPUS_TASKS = 320
_LIMITS = Limits(
    agent_timeout_sec=60, verifier_timeout_sec=60, build_timeout_sec=60, cpus=1.0, memory_mb=512, pids=64, network=False
)


def family_corpus(family: str) -> list[str]:
    """Every protocol's system prompt, and the family's instructions, solutions, mistakes and the
    observations they produce, as the agent sees them."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(PROMPTS.glob("*.md"))]
    for seed in CORPUS_SEEDS:
        for task in procedural_tasks(family, CORPUS_TASKS, seed, ["easy", "medium", "hard"], _LIMITS):
            for script in (task.solution, task.metadata.get("mistake")):
                if script:
                    texts.append(f"<command>{script.strip()}</command>")
            texts += [task.prompt, "[exit code: 0]", "[exit code: 1]", "<done/>"]
    return texts


def small_tokenizer(qwen3, family: str, vocab_size: int):
    """Qwen3's fast tokenizer ``qwen3`` retrained on ``family_corpus(family)`` to ``vocab_size`` merges
    and bytes (plus Qwen3's special tokens)."""
    return qwen3.train_new_from_iterator(family_corpus(family), vocab_size=vocab_size)
