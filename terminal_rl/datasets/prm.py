"""Process-reward records: every step of an episode scored 1-5 by the judge's model with a versioned
step rubric (``prompts/step_rubric.<version>.md``), and the divergence step of failing episodes
(their first step scored at most ``divergence_max_score``). Optional: off without a judge. The
scores are asked through the judge service, so its cache (a rebuild asks nothing again), budget and
retries hold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from terminal_rl.agent.policies.model_json import MalformedReply, reply_object
from terminal_rl.datasets.records import describe
from terminal_rl.datasets.sources import Episode
from terminal_rl.judge.render import judge_messages, render_trajectory
from terminal_rl.judge.service import Answer, JudgeService

PROMPTS = Path(__file__).parent / "prompts"


def step_rubric(version: str) -> str:
    return (PROMPTS / f"step_rubric.{version}.md").read_text(encoding="utf-8")


def parse_step_scores(text: str, steps: int) -> list[dict]:
    """[{step, score, reason}] for exactly ``steps`` steps, scores integers 1-5 (pure)."""
    value = reply_object(text)
    entries = value.get("steps")
    if not isinstance(entries, list) or len(entries) != steps:
        raise MalformedReply(f"'steps' must list exactly {steps} entries, one per step in order")
    parsed = []
    for number, entry in enumerate(entries, start=1):
        score = entry.get("score") if isinstance(entry, dict) else None
        if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 5:
            raise MalformedReply(f"step {number}: 'score' must be an integer from 1 to 5")
        parsed.append({"step": number, "score": score, "reason": str(entry.get("reason", ""))})
    return parsed


def divergence_step(scores: list[int], passed: bool, max_score: int) -> int | None:
    """The first step (1-based) of a failing episode scored at most ``max_score`` (pure)."""
    if passed:
        return None
    return next((i for i, score in enumerate(scores, start=1) if score <= max_score), None)


def prm_records(episode: Episode, steps: list[dict], divergence: int | None, rubric: str) -> list[dict]:
    turns = episode.trajectory.turns
    return [
        {
            **describe(episode),
            "rubric": rubric,
            "step_index": i,
            "steps": len(turns),
            "prefix": [t.model_text for t in turns[: i - 1]],
            "action": turns[i - 1].model_text,
            "observation": turns[i - 1].observation or turns[i - 1].parse_error or "",
            "step_score": step["score"],
            "step_reason": step["reason"],
            "divergence_step": divergence,
        }
        for i, step in enumerate(steps, start=1)
    ]


async def score_episode(
    judge: JudgeService, episode: Episode, rubric_version: str, max_chars: tuple[int, int]
) -> Answer:
    """The step scores of one episode (``value``: [{step, score, reason}]), or why there are none."""
    trajectory = episode.trajectory
    task_prompt = next((m["content"] for m in trajectory.messages if m["role"] == "user"), "")
    messages = judge_messages(
        step_rubric(rubric_version),
        task_prompt,
        "a Linux container; the agent runs as root",
        render_trajectory(trajectory, *max_chars),
    )
    steps = len(trajectory.turns)
    return await judge.ask(f"step_rubric.{rubric_version}", messages, lambda text: parse_step_scores(text, steps))


@dataclass(frozen=True)
class StepScorer:
    """The PRM records of episodes, scored by the judge's model with the step rubric ``rubric``."""

    judge: JudgeService
    rubric: str
    divergence_max_score: int
    # Truncation of the rendered trajectory: (model text, observation) characters.
    max_chars: tuple[int, int]

    async def records(self, episode: Episode) -> list[dict] | str:
        """The episode's PRM records, or why the judge gave none (the build goes on)."""
        answer = await score_episode(self.judge, episode, self.rubric, self.max_chars)
        if answer.value is None:
            return answer.missing_reason
        divergence = divergence_step(
            [s["score"] for s in answer.value], episode.score == 1.0, self.divergence_max_score
        )
        return prm_records(episode, answer.value, divergence, self.rubric)

    def usage(self) -> dict:
        """The judge's requests, cache hits, tokens and cost so far."""
        return asdict(self.judge.stats)
