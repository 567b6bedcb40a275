"""Which episodes become SFT and DPO records (pure).

SFT: per task, the best passing episode (test score >= ``min_score``): the latest step first, then
the group whose rewards spread most (the signal was clearest there), then the highest reward.
DPO: per run, task version and step (the same weights), pairs of a chosen episode (score >= ``chosen_min``) and a
rejected one
(score < ``rejected_max``): the best chosen with the worst rejected, and so on, at most ``max_pairs``.
PRM: at most ``max_episodes`` episodes with turns, spread over tasks (one of each task in turn), a
task's failing episodes first (their divergence step is what a process reward model learns from).
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


def select_prm(episodes: list[Episode], max_episodes: int) -> list[Episode]:
    """The episodes the judge scores step by step, in the order of ``episodes`` within a task (0: none)."""
    by_task: dict[str, list[Episode]] = defaultdict(list)
    for episode in episodes:
        if episode.trajectory.turns:
            by_task[episode.task_id].append(episode)
    queues = [sorted(group, key=lambda e: e.score == 1.0) for _, group in sorted(by_task.items())]
    chosen: list[Episode] = []
    for rank in range(max((len(q) for q in queues), default=0)):
        chosen += [queue[rank] for queue in queues if rank < len(queue)]
    return chosen[:max_episodes]
