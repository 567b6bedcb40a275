"""The forged-fixture rule: a stated rule over facts the verifier records, instead of an LLM call.

Seed 002 found ~18% of its "chosen" samples had forged their own input fixtures to pass the tests.
Facts, recorded when the tests begin (``VerificationResult``): the container's changes against its
image (the engine's diff API, dockerd and podman), the start files whose content changed, and the
files the tests' Python processes read (Python's ``open`` audit events in the verifier's toolchain,
including the agent's Python programs that the tests run).

The rule. Let R be the files the tests read and T the files the episode changed (modified or
deleted in the diff, start files rewritten, files it added). An episode is flagged when
(a) the task has a reference solution whose changes S are known (an oracle evaluation of the same
task version among the sources) and some file in R ∩ T is not in S: it changed a file the tests
read that the reference solution leaves alone; or
(b) some file in R was provided by the image or the task's start files and the episode rewrote or
deleted it (modified or deleted in the diff, or a changed start file), and, when S is known, the
reference solution does not change it too. Rule (b) is the RL reward's forged-fixture guard too
(``terminal_rl/rewards/fixture_guard.py``).

Known false positives: a task whose valid solutions may edit an input the reference solution leaves
untouched (an in-place sort, a config one may fix either of two ways); with no reference solution,
any task whose job is to edit a file the tests read (a config fix). Known false negatives: reads by
programs the tests start that are not Python (``cat``, a compiled binary), so an input they consume
is not in R; a fixture forged identically to how the reference solution changes it; reads the tests
make through directory listings or ``os.stat`` only; reads past the first 5,000 distinct files of one
process (the audit hook's cap, ``toolchain_site.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from terminal_rl.datasets.sources import Episode
from terminal_rl.rewards.fixture_guard import forged_inputs
from terminal_rl.sandbox.verify.verifier import changed_files


@dataclass(frozen=True)
class Flag:
    episode: Episode
    reason: str
    files: list[str]


def forged_fixture(episode: Episode, solution_changes: set[str] | None) -> Flag | None:
    """The rule above for one episode; ``solution_changes``: S, or None when unknown."""
    verification = episode.trajectory.verification or {}
    reads = set(verification.get("reads", []))
    allowed = solution_changes or set()
    if solution_changes is not None:
        files = sorted(reads & changed_files(verification) - allowed)
        if files:
            return Flag(episode, "changed files the tests read that the reference solution does not change", files)
    files = forged_inputs(verification, solution_changes)
    if files:
        return Flag(
            episode, "rewrote or deleted inputs the image or the start files provided, which the tests read", files
        )
    return None


def solution_changes(episodes: list[Episode]) -> dict[str, set[str]]:
    """S per task version (content hash), from the oracle's evaluation episodes that passed."""
    found: dict[str, set[str]] = {}
    for episode in episodes:
        if episode.trajectory.policy == "oracle" and episode.score == 1.0:
            found.setdefault(episode.trajectory.content_hash, set()).update(
                changed_files(episode.trajectory.verification)
            )
    return found


def flag_forged(episodes: list[Episode]) -> list[Flag]:
    known = solution_changes(episodes)
    flags = (
        forged_fixture(e, known.get(e.trajectory.content_hash)) for e in episodes if e.trajectory.policy != "oracle"
    )
    return [flag for flag in flags if flag is not None]
