"""Evaluate the evaluators: run a judge over labelled trajectories and compare with expected ranges.

The set (``calibration/cases.yaml`` + ``calibration/trajectories.jsonl``) is produced by scripted
episodes in real containers and rendered by the same renderer training uses. A case passes when
every attempt's score lies in its expected range (a missing judgement fails the case).
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import yaml

from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.policies.scripted import ScriptedPolicy
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.runner import run_episode
from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.judge.render import describe_environment, render_trajectory
from terminal_rl.judge.service import JudgeRequest, JudgeService
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.tasks.model import Task

CALIBRATION = Path(__file__).parent / "calibration"
CASES_FILE = CALIBRATION / "cases.yaml"
TRAJECTORIES_FILE = CALIBRATION / "trajectories.jsonl"
CALIBRATION_TASK = "csv-file-parsing-amount-sum"


@dataclass(frozen=True)
class Case:
    id: str
    description: str
    expected: tuple[float, float]
    responses: list[str]
    max_turns: int = 20


@dataclass
class CaseResult:
    id: str
    expected: tuple[float, float]
    scores: list[float | None]

    @property
    def passed(self) -> bool:
        low, high = self.expected
        return all(s is not None and low <= s <= high for s in self.scores)

    @property
    def mean(self) -> float | None:
        present = [s for s in self.scores if s is not None]
        return statistics.fmean(present) if present else None

    @property
    def spread(self) -> float:
        present = [s for s in self.scores if s is not None]
        return max(present) - min(present) if present else 0.0


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    return [
        Case(c["id"], c["description"], tuple(c["expected"]), c["responses"], c.get("max_turns", 20))
        for c in yaml.safe_load(path.read_text(encoding="utf-8"))
    ]


def load_trajectories(path: Path = TRAJECTORIES_FILE) -> dict[str, Trajectory]:
    """Case id -> its recorded trajectory."""
    trajectories = [Trajectory.from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {t.metadata["case"]: t for t in trajectories}


async def make_calibration_set(
    task: Task, factory: SandboxFactory, limits: EpisodeLimits, cases: list[Case], out: Path = TRAJECTORIES_FILE
) -> list[Trajectory]:
    """Run each case's scripted episode in a real container and record its trajectory."""
    protocol = make_protocol("xml_yaml")
    trajectories = []
    for case in cases:
        trajectory = await run_episode(
            task,
            factory,
            protocol,
            ScriptedPolicy(case.responses),
            replace(limits, max_turns=case.max_turns),
            rollout_id=case.id,
        )
        trajectory.metadata["case"] = case.id
        trajectories.append(trajectory)
    out.write_text("".join(t.to_json() + "\n" for t in trajectories), encoding="utf-8")
    return trajectories


async def calibrate(
    service: JudgeService, task: Task, cases: list[Case], trajectories: dict[str, Trajectory], attempts: int
) -> dict:
    """Judge every case ``attempts`` times; the result record `judge command=report` ranks."""
    environment = describe_environment(task)
    config = service.config
    results = []
    for case in cases:
        rendered = render_trajectory(trajectories[case.id], config.max_model_chars, config.max_observation_chars)
        scores = []
        for attempt in range(attempts):
            # Each attempt is its own cache entry: repeated attempts measure the judge's spread,
            # and re-running a calibration costs nothing.
            request = JudgeRequest(task.prompt, environment, f"{rendered}\n\n(calibration attempt {attempt + 1})")
            scores.append((await service.judge(request)).score)
        results.append(CaseResult(case.id, case.expected, scores))
    stats = service.stats
    return {
        "judge": service.backend.label,
        "rubric": config.rubric,
        "attempts": attempts,
        "passed": sum(r.passed for r in results),
        "cases": [{**asdict(r), "passed": r.passed, "mean": r.mean, "spread": r.spread} for r in results],
        "mean_score": statistics.fmean([r.mean for r in results if r.mean is not None] or [0.0]),
        "cost_usd": stats.cost_usd,
        "tokens": stats.prompt_tokens + stats.completion_tokens,
        "calls": stats.calls,
        "latency_sec": stats.latency_sec,
    }


def result_path(calibration_dir: Path, judge_label: str) -> Path:
    return calibration_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', judge_label)}.json"


def load_results(calibration_dir: Path) -> list[dict]:
    """Every judge calibrated so far, best first (most cases passed, then smallest spread)."""
    results = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(calibration_dir.glob("*.json"))]
    return sorted(results, key=lambda r: (-r["passed"], statistics.fmean([c["spread"] for c in r["cases"]] or [0])))


def plot_results(results: list[dict], out: Path) -> Path:
    """PNG: per case, each judge's scores over the expected range (shaded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [c["id"] for c in results[0]["cases"]]
    figure, axis = plt.subplots(figsize=(10, 0.55 * len(cases) + 1.5))
    for row, case in enumerate(results[0]["cases"]):
        low, high = case["expected"]
        axis.fill_betweenx([row - 0.4, row + 0.4], low, high, color="tab:green", alpha=0.15)
    for index, result in enumerate(results):
        offset = (index - (len(results) - 1) / 2) * 0.15
        for row, case in enumerate(result["cases"]):
            scores = [s for s in case["scores"] if s is not None]
            axis.scatter(
                scores,
                [row + offset] * len(scores),
                s=18,
                color=f"C{index}",
                label=result["judge"] if row == 0 else None,
            )
    axis.set_yticks(range(len(cases)), cases)
    axis.set_xlim(-0.02, 1.02)
    axis.set_xlabel("judge score (shaded: expected range)")
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out
