"""Candidates of the LLM pipeline and their state on disk, so a rerun continues where one stopped.

Each candidate is ``<work_dir>/candidates/<id>.json`` (its stage, drafts, repair rounds, results,
LLM usage and timings, and why it was dropped) with every LLM conversation beside it in
``conversations/<id>.<stage>.json``. A stage is atomic per candidate: one interrupted mid-stage runs
that stage again.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

# In order; a candidate's ``stage`` is the next one it runs.
STAGES = ("describe", "dedup", "environment", "completion", "solve", "gates", "write", "done")


@dataclass
class Candidate:
    id: str
    index: int
    # The (category, complexity, persona) draw.
    spec: dict[str, str]
    stage: str = STAGES[0]
    # active | dropped | accepted
    status: str = "active"
    # Why it was dropped: {"stage", "reason", "detail"}.
    drop: dict[str, str] | None = None
    # Why it waits at its stage for a rerun (an error that is not the candidate's: the LLM endpoint, the
    # engine): {"stage", "error", "detail"}; cleared once the stage runs again.
    waiting: dict[str, str] | None = None
    description: dict | None = None
    environment: dict | None = None
    completion: dict | None = None
    # Stage -> the round (0: first attempt, then repairs) that passed.
    rounds: dict[str, int] = field(default_factory=dict)
    solve: dict | None = None
    gates: dict | None = None
    usage: dict[str, float] = field(
        default_factory=lambda: {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
    )
    timings: dict[str, float] = field(default_factory=lambda: {"build_sec": 0.0, "test_sec": 0.0})

    @property
    def active(self) -> bool:
        return self.status == "active"

    def reached(self, stage: str) -> bool:
        return STAGES.index(self.stage) > STAGES.index(stage)

    def advance(self, stage: str) -> None:
        """Past ``stage``; past the last one, accepted."""
        self.stage = STAGES[STAGES.index(stage) + 1]
        if self.stage == STAGES[-1]:
            self.status = "accepted"

    def drop_at(self, stage: str, reason: str, detail: str = "") -> None:
        self.status, self.drop = "dropped", {"stage": stage, "reason": reason, "detail": detail[-4000:]}


def draw_specs(
    count: int, seed: int, categories: list[str], complexities: list[str], personas: list[str]
) -> list[dict[str, str]]:
    """``count`` (category, complexity, persona) draws, the same for the same seed (pure)."""
    rng = random.Random(seed)
    return [
        {"category": rng.choice(categories), "complexity": rng.choice(complexities), "persona": rng.choice(personas)}
        for _ in range(count)
    ]


class CandidateStore:
    def __init__(self, work_dir: Path):
        self.root = work_dir
        (work_dir / "candidates").mkdir(parents=True, exist_ok=True)
        (work_dir / "conversations").mkdir(parents=True, exist_ok=True)

    def candidates(self, seed: int, specs: list[dict[str, str]]) -> list[Candidate]:
        """The candidates of this run: loaded where a state exists, else new."""
        found = []
        for index, spec in enumerate(specs):
            candidate_id = f"gen-s{seed}-{index:05d}"
            path = self._path(candidate_id)
            found.append(
                Candidate(**json.loads(path.read_text(encoding="utf-8")))
                if path.is_file()
                else Candidate(candidate_id, index, spec)
            )
        return found

    def stage_seconds(self) -> dict[str, float]:
        """Wall time spent in each stage over every run of this work directory so far."""
        path = self.root / "stage_seconds.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def save_stage_seconds(self, seconds: dict[str, float]) -> None:
        self._write(self.root / "stage_seconds.json", json.dumps(seconds, indent=2))

    def save(self, candidate: Candidate) -> None:
        self._write(self._path(candidate.id), json.dumps(asdict(candidate), indent=2))

    def save_conversation(self, candidate: Candidate, stage: str, messages: list[dict[str, str]]) -> None:
        self._write(self.root / "conversations" / f"{candidate.id}.{stage}.json", json.dumps(messages, indent=2))

    def _path(self, candidate_id: str) -> Path:
        return self.root / "candidates" / f"{candidate_id}.json"

    @staticmethod
    def _write(path: Path, text: str) -> None:
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(text + "\n", encoding="utf-8")
        partial.replace(path)
