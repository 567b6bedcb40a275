"""A generated task's difficulty label from its measured solve rate (pure)."""

from __future__ import annotations

from terminal_rl.tasks.model import Difficulty


def difficulty_for(solve_rate: float, bands: dict[str, float]) -> Difficulty:
    """The easiest label whose lower bound the rate reaches: ``bands`` maps easy, medium and hard to
    the least solve rate (0-1) each needs; below hard's bound a task is extremely_hard."""
    order = (Difficulty.EASY, Difficulty.MEDIUM, Difficulty.HARD)
    if sorted(bands) != sorted(d.value for d in order) or not bands["easy"] >= bands["medium"] >= bands["hard"]:
        raise ValueError(f"difficulty bands {bands} must give easy >= medium >= hard lower bounds")
    return next((d for d in order if solve_rate >= bands[d.value]), Difficulty.EXTREMELY_HARD)
