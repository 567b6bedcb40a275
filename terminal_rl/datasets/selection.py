"""Which episodes become SFT and DPO records (pure).

SFT: per task, the best passing episode (test score >= ``min_score``): the latest step first, then
the group whose rewards spread most (the signal was clearest there), then the highest reward.
DPO: per run, task version and step (the same weights), pairs of a chosen episode (score >= ``chosen_min``) and a
rejected one
(score < ``rejected_max``): the best chosen with the worst rejected, and so on, at most ``max_pairs``.
"""

from __future__ import annotations

from collections import defaultdict

from terminal_rl.datasets.sources import Episode


def group_spread(episodes: list[Episode]) -> dict[tuple[str, str], float]:
    """(run, group) -> max - min reward within it."""
    rewards: dict[tuple[str, str], list[float]] = defaultdict(list)
    for episode in episodes:
        rewards[(episode.run_id, episode.group)].append(episode.reward)
    return {key: max(values) - min(values) for key, values in rewards.items()}


def select_sft(episodes: list[Episode], min_score: float, excluded: set[str] = frozenset()) -> list[Episode]:
    spread = group_spread(episodes)
    best: dict[str, Episode] = {}
    for episode in episodes:
        if episode.score < min_score or episode.id in excluded:
            continue
        key = (episode.step, spread[(episode.run_id, episode.group)], episode.reward)
        current = best.get(episode.task_id)
        if current is None or key > (current.step, spread[(current.run_id, current.group)], current.reward):
            best[episode.task_id] = episode
    return [best[task] for task in sorted(best)]


def select_dpo(
    episodes: list[Episode], chosen_min: float, rejected_max: float, max_pairs: int, excluded: set[str] = frozenset()
) -> list[tuple[Episode, Episode]]:
    if not rejected_max <= chosen_min:
        raise ValueError(f"dpo thresholds: rejected_max {rejected_max} must not exceed chosen_min {chosen_min}")
    by_key: dict[tuple[str, str, str, int], list[Episode]] = defaultdict(list)
    for episode in episodes:
        by_key[(episode.run_id, episode.task_id, episode.trajectory.content_hash, episode.step)].append(episode)
    pairs = []
    for key in sorted(by_key):
        group = by_key[key]
        chosen = sorted((e for e in group if e.score >= chosen_min and e.id not in excluded), key=lambda e: -e.score)
        rejected = sorted((e for e in group if e.score < rejected_max), key=lambda e: e.score)
        pairs += list(zip(chosen, rejected))[:max_pairs]
    return pairs
