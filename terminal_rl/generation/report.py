"""The funnel of one generation run: candidates per stage, why they were dropped, what it cost (pure)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table

from terminal_rl.generation.candidates import STAGES, Candidate


def funnel(candidates: list[Candidate], stage_seconds: dict[str, float]) -> dict:
    """Counts per stage (entered: reached it; passed: went beyond it), drop reasons, LLM usage and cost
    per accepted task, build and test times, and the rate through stages 2-3 (environment, completion)."""
    order = {stage: i for i, stage in enumerate(STAGES)}
    accepted = [c for c in candidates if c.status == "accepted"]
    usage = {
        key: sum(c.usage[key] for c in candidates)
        for key in ("requests", "prompt_tokens", "completion_tokens", "cost_usd")
    }
    built = [c.timings["build_sec"] for c in candidates if c.timings["build_sec"] > 0]
    tested = [c.timings["test_sec"] for c in candidates if c.timings["test_sec"] > 0]
    through = sum(order[c.stage] >= order["environment"] for c in candidates)
    stage_2_3_sec = stage_seconds.get("environment", 0.0) + stage_seconds.get("completion", 0.0)
    return {
        "candidates": len(candidates),
        "accepted": len(accepted),
        "stages": {
            stage: {
                "entered": sum(order[c.stage] >= order[stage] for c in candidates),
                "passed": sum(order[c.stage] > order[stage] for c in candidates),
            }
            for stage in STAGES[:-1]
        },
        "dropped": [{"candidate": c.id, **c.drop} for c in candidates if c.drop],
        "drop_reasons": dict(
            Counter(f"{c.drop['stage']}: {c.drop['reason']}" for c in candidates if c.drop).most_common()
        ),
        # Candidates held at a stage by an error that is not theirs (they continue on a rerun).
        "waiting": dict(
            Counter(f"{c.waiting['stage']}: {c.waiting['error']}" for c in candidates if c.waiting).most_common()
        ),
        "llm": {
            **usage,
            "tokens_per_accepted": (usage["prompt_tokens"] + usage["completion_tokens"]) / len(accepted)
            if accepted
            else None,
            "cost_usd_per_accepted": usage["cost_usd"] / len(accepted) if accepted else None,
        },
        "build_sec": {"total": sum(built), "mean": sum(built) / len(built) if built else 0.0},
        "test_sec": {"total": sum(tested), "mean": sum(tested) / len(tested) if tested else 0.0},
        "stage_seconds": stage_seconds,
        "candidates_per_minute_stages_2_3": 60 * through / stage_2_3_sec if stage_2_3_sec else None,
        "accepted_tasks": sorted(c.id for c in accepted),
        # What the accepted tasks cover: per category, and per difficulty band of the solve filter.
        "accepted_by_category": dict(Counter(c.spec["category"] for c in accepted).most_common()),
        "accepted_by_difficulty": dict(
            Counter((c.solve or {}).get("difficulty", "unrated") for c in accepted).most_common()
        ),
    }


def print_funnel(report: dict, console: Console) -> None:
    console.print(f"generation funnel: {report['accepted']} of {report['candidates']} candidates accepted")
    table = Table()
    for column in ("stage", "entered", "passed", "seconds"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for stage, counts in report["stages"].items():
        table.add_row(
            stage, str(counts["entered"]), str(counts["passed"]), f"{report['stage_seconds'].get(stage, 0):.0f}"
        )
    console.print(table)
    for reason, n in report["drop_reasons"].items():
        console.print(f"  dropped at {reason}: {n}")
    if report["accepted"]:
        for key in ("category", "difficulty"):
            shares = ", ".join(f"{name} {n}" for name, n in report[f"accepted_by_{key}"].items())
            console.print(f"  accepted by {key}: {shares}")
    for reason, n in report["waiting"].items():
        console.print(f"  waiting at {reason}: {n} (a rerun of the same command continues them)")
    llm = report["llm"]
    console.print(
        f"LLM: {llm['requests']} requests, {llm['prompt_tokens'] + llm['completion_tokens']:.0f} tokens, "
        f"${llm['cost_usd']:.4f}"
        + (
            f" (${llm['cost_usd_per_accepted']:.4f} per accepted task)"
            if llm["cost_usd_per_accepted"] is not None
            else ""
        )
    )
    rate = report["candidates_per_minute_stages_2_3"]
    console.print(
        f"build {report['build_sec']['total']:.0f}s, tests {report['test_sec']['total']:.0f}s"
        + (f"; {rate:.1f} candidates/min through environment + completion" if rate else "")
    )
