"""A run's logged figures as tables, for notebooks/ and tests: per-step metrics from every launch's
``logs/metrics.<time>.jsonl`` (a resumed run writes a new file; later launches win per step) and
one row per trajectory from ``logs/rollouts/<split>_step<N>.<pid>.jsonl``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

_ROLLOUT_FILE = re.compile(r"(?P<split>\w+?)_step(?P<step>\d+)\.\d+\.jsonl")


def load_metrics(run_dir: str | Path) -> pd.DataFrame:
    """Metrics by step: index ``step``, one column per metric name (NaN where a step lacks it)."""
    paths = sorted((Path(run_dir) / "logs").glob("metrics.*.jsonl"))
    if not paths:
        raise FileNotFoundError(f"no logs/metrics.*.jsonl under {run_dir}: is it a run directory?")
    steps: dict[int, dict[str, float]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            steps.setdefault(int(record["step"]), {}).update(record["data"])
    return pd.DataFrame.from_dict(steps, orient="index").sort_index().rename_axis("step")


def columns(metrics: pd.DataFrame, prefix: str, suffix: str = "") -> pd.DataFrame:
    """The columns ``<prefix><name><suffix>``, renamed to ``<name>`` (e.g. ``reward/`` + ``/mean``)."""
    names = {
        c: c[len(prefix) : len(c) - len(suffix)]
        for c in metrics.columns
        if c.startswith(prefix) and c.endswith(suffix) and "/" not in c[len(prefix) : len(c) - len(suffix)]
    }
    return metrics[list(names)].rename(columns=names)


def validation_score(key: str) -> tuple[str, str, str] | None:
    """``(source, "test score" | "pass rate", "mean@k")`` for verl's validation metrics
    ``val-core/<source>/acc/mean@k`` and ``val-aux/<source>/pass/mean@k``; None for any other key (with
    k > 1 samples a task, verl logs ``std@k`` beside ``mean@k``: a spread, not a score)."""
    parts = key.split("/")
    if (
        len(parts) == 4
        and parts[0] in ("val-core", "val-aux")
        and parts[2] in ("acc", "pass")
        and parts[3].startswith("mean@")
    ):
        return parts[1], "test score" if parts[2] == "acc" else "pass rate", parts[3]
    return None


def load_trajectories(run_dir: str | Path) -> pd.DataFrame:
    """One row per logged trajectory: split, step, task, termination, reward, test score (NaN when
    unverified), turns, masked, stage."""
    rows = []
    for path in sorted((Path(run_dir) / "logs" / "rollouts").glob("*.jsonl")):
        match = _ROLLOUT_FILE.fullmatch(path.name)
        if match is None:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            trajectory = json.loads(line)
            meta = trajectory.get("metadata", {})
            rows.append(
                {
                    "split": match["split"],
                    "step": int(match["step"]),
                    "task_id": trajectory["task_id"],
                    "termination": trajectory["termination"],
                    "reward": meta.get("reward"),
                    "score": (trajectory.get("verification") or {}).get("score"),
                    "turns": len(trajectory["turns"]),
                    "masked": bool(meta.get("masked")),
                    "stage": meta.get("stage"),
                }
            )
    return pd.DataFrame(
        rows, columns=["split", "step", "task_id", "termination", "reward", "score", "turns", "masked", "stage"]
    )


def failure_modes(trajectories: pd.DataFrame, split: str = "train") -> pd.DataFrame:
    """How episodes ended: fraction of each termination per step (rows sum to 1)."""
    chosen = trajectories[trajectories["split"] == split]
    counts = chosen.groupby(["step", "termination"]).size().unstack(fill_value=0)
    return counts.div(counts.sum(axis=1), axis=0)
