"""Simulated GRPO sampling: how many groups carry no learning signal, with and without data filters.

    .venv/bin/python benchmarks/filter_simulation.py [--steps 300] [--seed 0]

Synthetic tasks with known per-task success probabilities (many tasks the policy always or never
solves, as in practice), GRPO groups of 16 with binary test outcomes, 8 groups per step. For each
strategy it reports the fraction of trained groups with zero variance on the test component, the
rollouts spent per useful (varying) group, including the offline filter's own rollouts, and the
refill/parking activity. The filters' decision code is the project's own
(terminal_rl.filtering.variance / periodic); the reference point is the brief's 40% zero-variance
groups in a real run.
"""

from __future__ import annotations

import argparse

import numpy as np

from terminal_rl.filtering.periodic import PassRateTracker
from terminal_rl.filtering.variance import lacks_signal

GROUP = 16
GROUPS_PER_STEP = 8
TASKS = 300
MAX_REFILLS = 8
OFFLINE_ATTEMPTS = 4


def task_probabilities(rng: np.random.Generator) -> np.ndarray:
    """Per-task success probabilities: a third never solved, a fifth always, the rest in between."""
    kinds = rng.choice(3, size=TASKS, p=[0.33, 0.2, 0.47])
    middle = rng.beta(0.7, 0.7, size=TASKS)
    return np.where(kinds == 0, 0.0, np.where(kinds == 1, 1.0, middle))


def run(strategy: str, probabilities: np.ndarray, steps: int, rng: np.random.Generator) -> dict[str, float]:
    pool = np.arange(TASKS)
    rollouts = trained = zero = refills = 0
    if strategy == "pass_rate":
        attempts = rng.random((TASKS, OFFLINE_ATTEMPTS)) < probabilities[:, None]
        rollouts += TASKS * OFFLINE_ATTEMPTS
        pool = pool[attempts.min(axis=1) != attempts.max(axis=1)]
    tracker = PassRateTracker(min_samples=GROUP, window=2 * GROUP, mastered=0.95, untouchable=0.0, park_steps=50)
    parked: set[int] = set()
    for _ in range(steps):
        step_refills, kept = 0, 0
        samples = []
        while kept < GROUPS_PER_STEP:
            candidates = [t for t in pool if t not in parked] or list(pool)
            task = int(rng.choice(candidates))
            outcome = (rng.random(GROUP) < probabilities[task]).astype(float)
            rollouts += GROUP
            if strategy == "online_variance":
                if lacks_signal(list(outcome), list(outcome), 0.0) and step_refills < MAX_REFILLS:
                    step_refills += 1
                    continue
            kept += 1
            trained += 1
            zero += float(outcome.min() == outcome.max())
            samples += [(str(task), float(score)) for score in outcome]
        refills += step_refills
        if strategy == "periodic_pass_rate":
            parked = {int(t) for t in tracker.update(samples)}
    useful = trained - zero
    return {
        "zero_variance_fraction": zero / trained,
        "rollouts_per_useful_group": rollouts / max(useful, 1),
        "refills_per_step": refills / steps,
        "pool": float(len(pool)),
        "parked_at_end": float(len(parked)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    probabilities = task_probabilities(np.random.default_rng(args.seed))
    print(
        f"{TASKS} tasks (never solved {np.mean(probabilities == 0):.0%}, always {np.mean(probabilities == 1):.0%}), "
        f"groups of {GROUP}, {GROUPS_PER_STEP} groups/step, {args.steps} steps; reference: 40% zero-variance groups"
    )
    baseline = None
    for strategy in ("none", "pass_rate", "online_variance", "periodic_pass_rate"):
        result = run(strategy, probabilities, args.steps, np.random.default_rng(args.seed + 1))
        baseline = baseline or result
        print(
            f"{strategy:>18}: zero-variance groups {result['zero_variance_fraction']:6.1%}  "
            f"rollouts per useful group {result['rollouts_per_useful_group']:6.1f} "
            f"({result['rollouts_per_useful_group'] / baseline['rollouts_per_useful_group']:.2f}x none)  "
            f"refills/step {result['refills_per_step']:.2f}  pool {result['pool']:.0f}  parked "
            f"{result['parked_at_end']:.0f}"
        )


if __name__ == "__main__":
    main()
