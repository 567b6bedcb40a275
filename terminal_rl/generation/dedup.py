"""Near-duplicate instructions by word-shingle Jaccard similarity (pure).

Two instructions are near-duplicates when the sets of their ``k``-word shingles (lower-cased words)
overlap by at least ``threshold`` (|A ∩ B| / |A ∪ B|). Exact over the candidates of a run: a run has
thousands, not millions, so no MinHash sketch is needed.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9_./-]+")


def shingles(text: str, k: int) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < k:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class NearDuplicates:
    """The instructions kept so far; ``match`` names the first one a new text nearly repeats."""

    def __init__(self, threshold: float, k: int):
        if not 0 < threshold <= 1 or k < 1:
            raise ValueError(f"duplicate threshold {threshold} must be in (0, 1] and shingle size {k} >= 1")
        self.threshold, self.k = threshold, k
        self._kept: list[tuple[str, frozenset]] = []

    def match(self, text: str) -> tuple[str, float] | None:
        """(id, similarity) of the most similar kept text at or above the threshold, else None."""
        mine = shingles(text, self.k)
        best = max(((key, jaccard(mine, theirs)) for key, theirs in self._kept), key=lambda kv: kv[1], default=None)
        return best if best is not None and best[1] >= self.threshold else None

    def add(self, key: str, text: str) -> None:
        self._kept.append((key, shingles(text, self.k)))
