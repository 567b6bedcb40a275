"""The LLM task-generation pipeline (Endless Terminals, seed 003), stage by stage over all candidates.

1. describe: the LLM writes the instruction and a privileged ground truth (JSON, one correction).
2. dedup: instructions that nearly repeat an earlier candidate's are dropped.
3. environment: the LLM writes the Dockerfile and initial-state tests; our builder builds it (same
   cache, CA injection, never a pull) and the tests must pass in a fresh sandbox; failures go back to
   the LLM for at most ``repair_rounds`` repairs.
4. completion: weighted completion tests and a reference solution; each test must fail in the initial
   state and all must pass after the solution, through our verifier (same repairs).
5. solve: the policy under test tries each task ``solve_attempts`` times through our evaluation code;
   unsolved tasks are dropped, the solve rate becomes the difficulty label.
6. gates: solution passes and no-op fails in fresh containers; verifier attacks score no more than a no-op.
7. write: the task as a Harbor folder (instruction, task.toml, environment/, tests/ with weights, solution/).

Each stage runs for every candidate that reached it (``concurrency`` at once) before the next starts,
and saves each candidate's state when done with it, so a rerun resumes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.evaluation import EvaluationPlan, evaluate, read_results
from terminal_rl.agent.policies.base import Policy, PolicyError
from terminal_rl.agent.policies.json_chat import JsonChat
from terminal_rl.agent.policies.model_json import MalformedReply
from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.generation.candidates import Candidate, CandidateStore
from terminal_rl.generation.checks import InfrastructureError, acceptance_gates, check_completion, check_environment
from terminal_rl.generation.config import GeneratorConfig
from terminal_rl.generation.dedup import NearDuplicates
from terminal_rl.generation.difficulty import difficulty_for
from terminal_rl.generation.drafts import parse_completion, parse_description, parse_environment
from terminal_rl.sandbox.runtime.sandbox import SandboxError, SandboxFactory
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.model import Difficulty, Environment, Task, VerifierKind

log = logging.getLogger(__name__)
PROMPTS = Path(__file__).parent / "prompts"
PROMPT_VERSION = "v1"
INITIAL_TESTS = "test_initial_state.py"
COMPLETION_TESTS = "test_outputs.py"


def prompt(stage: str) -> str:
    return (PROMPTS / f"{stage}.{PROMPT_VERSION}.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class SolveFilter:
    """The policy under test and how it attempts each task (through ``agent.evaluation``)."""

    policy: Policy
    protocol: ActionProtocol
    limits: EpisodeLimits
    results_file: Path


def generated_task(
    candidate: Candidate, config: GeneratorConfig, tests: str | None = None, difficulty: Difficulty = Difficulty.MEDIUM
) -> Task:
    """The candidate as a task: its completion tests and solution, or (``tests`` given) a task whose
    tests are ``tests`` (the initial-state check)."""
    description, completion = candidate.description, candidate.completion or {}
    return Task(
        id=candidate.id,
        title=description["title"],
        prompt=description["instruction"],
        difficulty=difficulty,
        category=candidate.spec["category"],
        tags=("generated",),
        environment=Environment(dockerfile=candidate.environment["dockerfile"]),
        tests={INITIAL_TESTS: tests} if tests is not None else {COMPLETION_TESTS: completion["tests"]},
        verifier=VerifierKind.WEIGHTED_PYTEST,
        test_weights=None if tests is not None else completion["weights"],
        files={},
        limits=config.limits,
        source=f"generated:{candidate.id}",
        solution=None if tests is not None else completion["solution"],
        metadata={
            "generator": config.llm.model,
            "persona": candidate.spec["persona"],
            "complexity": candidate.spec["complexity"],
        },
    )


def waiting_lines(waiting: list[Candidate]) -> list[str]:
    """One console line per (stage, error class): how many candidates wait on it, and the first
    message (pure)."""
    first: dict[tuple[str, str], str] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for candidate in waiting:
        key = (candidate.waiting["stage"], candidate.waiting["error"])
        counts[key] += 1
        first.setdefault(key, candidate.waiting["detail"])
    return [
        f"[yellow]{stage}: {n} candidate(s) wait on {error}[/yellow] (e.g. {first[(stage, error)][:200]}); "
        "fix it and run the same command again"
        for (stage, error), n in counts.items()
    ]


class Pipeline:
    def __init__(
        self,
        config: GeneratorConfig,
        store: CandidateStore,
        llm: JsonChat,
        factory: SandboxFactory,
        solver: SolveFilter,
        output_dir: Path,
        console: Console,
    ):
        self.config, self.store, self.llm, self.factory = config, store, llm, factory
        self.solver, self.output_dir, self.console = solver, output_dir, console
        self.stage_seconds = store.stage_seconds()

    async def run(self, candidates: list[Candidate]) -> None:
        stages: list[tuple[str, Callable[[Candidate], Awaitable[None]] | None]] = [
            ("describe", self.describe),
            ("dedup", None),
            ("environment", self.environment),
            ("completion", self.completion),
            ("solve", None),
            ("gates", self.gates),
            ("write", self.write),
        ]
        for stage, work in stages:
            due = [c for c in candidates if c.active and c.stage == stage]
            started = time.monotonic()
            if stage == "dedup":
                self.dedup(candidates)
            elif stage == "solve":
                await self.solve(due)
            else:
                await self._each(stage, due, work)
            self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + time.monotonic() - started
            self.store.save_stage_seconds(self.stage_seconds)

    async def _each(self, stage: str, due: list[Candidate], work: Callable[[Candidate], Awaitable[None]]) -> None:
        slots = asyncio.Semaphore(self.config.concurrency)
        with Progress(console=self.console, transient=False) as progress:
            bar = progress.add_task(f"{stage}: {len(due)} candidates", total=len(due))

            async def one(candidate: Candidate) -> None:
                async with slots:
                    candidate.waiting = None
                    try:
                        await work(candidate)
                    except MalformedReply as error:
                        candidate.drop_at(stage, "malformed output", str(error))
                    except (InfrastructureError, SandboxError, PolicyError) as error:  # not the candidate's fault
                        log.warning("%s stays at %s for a rerun: %s", candidate.id, stage, error)
                        candidate.waiting = {"stage": stage, "error": type(error).__name__, "detail": str(error)[:500]}
                    else:
                        if candidate.active:
                            candidate.advance(stage)
                    self.store.save(candidate)
                    progress.advance(bar)

            await asyncio.gather(*(one(candidate) for candidate in due))
        for line in waiting_lines([c for c in due if c.waiting]):
            self.console.print(line)

    async def describe(self, candidate: Candidate) -> None:
        request = json.dumps({"candidate": candidate.id, **candidate.spec}, indent=2)
        draft, conversation = await self.llm.ask(
            [{"role": "system", "content": prompt("describe")}, {"role": "user", "content": request}],
            parse_description,
            candidate.usage,
        )
        self.store.save_conversation(candidate, "describe", conversation)
        candidate.description = asdict(draft)

    def dedup(self, candidates: list[Candidate]) -> None:
        """Drop, in candidate order, each instruction that nearly repeats an earlier kept one."""
        seen = NearDuplicates(self.config.duplicate_threshold, self.config.shingle_words)
        for candidate in candidates:
            if candidate.description is None or (candidate.drop or {}).get("stage") == "dedup":
                continue
            instruction = candidate.description["instruction"]
            if candidate.active and candidate.stage == "dedup":
                match = seen.match(instruction)
                if match:
                    candidate.drop_at("dedup", "near-duplicate", f"{match[1]:.2f} similar to {match[0]}")
                else:
                    candidate.advance("dedup")
                self.store.save(candidate)
                if match:
                    continue
            seen.add(candidate.id, instruction)

    async def environment(self, candidate: Candidate) -> None:
        request = json.dumps(
            {"candidate": candidate.id, "allowed_base_images": self.config.base_images, **candidate.description},
            indent=2,
        )

        async def check(draft) -> str:
            candidate.environment = asdict(draft)
            result = await check_environment(
                self.factory, generated_task(candidate, self.config, draft.initial_tests), self.config.base_images
            )
            candidate.timings["build_sec"] += result.build_sec
            candidate.timings["test_sec"] += result.test_sec
            return result.problem

        await self._repaired(candidate, "environment", request, parse_environment, check)

    async def completion(self, candidate: Candidate) -> None:
        request = json.dumps(
            {"candidate": candidate.id, **candidate.description, "environment": candidate.environment}, indent=2
        )

        async def check(draft) -> str:
            candidate.completion = asdict(draft)
            result = await check_completion(self.factory, generated_task(candidate, self.config))
            candidate.timings["test_sec"] += result.test_sec
            return result.problem

        await self._repaired(candidate, "completion", request, parse_completion, check)

    async def _repaired(self, candidate: Candidate, stage: str, request: str, parse, check) -> None:
        """Ask, check, and send the problem back for at most ``repair_rounds`` repairs; then drop."""
        conversation = [{"role": "system", "content": prompt(stage)}, {"role": "user", "content": request}]
        try:
            for round_number in range(self.config.repair_rounds + 1):
                draft, conversation = await self.llm.ask(conversation, parse, candidate.usage)
                problem = await check(draft)
                if not problem:
                    candidate.rounds[stage] = round_number
                    return
                conversation.append({"role": "user", "content": f"{problem}\nReply with the corrected JSON object."})
            reason = {"environment": "environment never passed", "completion": "completion tests never passed"}[stage]
            candidate.drop_at(stage, reason, problem)
        finally:
            self.store.save_conversation(candidate, stage, conversation)

    async def solve(self, due: list[Candidate]) -> None:
        """Every due task, ``solve_attempts`` episodes of the policy under test; solved at least once stays."""
        if not due:
            return
        tasks = [generated_task(candidate, self.config) for candidate in due]
        solver = self.solver
        plan = EvaluationPlan(tasks, self.config.solve_attempts, self.config.solve_concurrency, solver.results_file)
        self.console.print(f"solve filter: {len(tasks)} tasks x {plan.attempts} attempts of {solver.policy.name}")
        await evaluate(plan, self.factory, solver.protocol, solver.policy, solver.limits, self.console)
        hashes = {task.id: task.content_hash for task in tasks}
        scores: dict[str, list[float]] = {task.id: [] for task in tasks}
        for trajectory in read_results(solver.results_file):
            if hashes.get(trajectory.task_id) == trajectory.content_hash and trajectory.score is not None:
                scores[trajectory.task_id].append(trajectory.score)
        for candidate in due:
            attempts = scores[candidate.id]
            if not attempts:  # every episode was an infrastructure failure: try again on a rerun
                continue
            rate = sum(score == 1.0 for score in attempts) / len(attempts)
            candidate.solve = {
                "attempts": len(attempts),
                "solved": sum(s == 1.0 for s in attempts),
                "rate": rate,
                "difficulty": difficulty_for(rate, self.config.difficulty_bands).value,
            }
            if rate == 0.0:
                candidate.drop_at("solve", "never solved", f"0 of {len(attempts)} attempts of {solver.policy.name}")
            else:
                candidate.advance("solve")
            self.store.save(candidate)

    async def gates(self, candidate: Candidate) -> None:
        candidate.gates = await acceptance_gates(
            self.factory, generated_task(candidate, self.config), self.config.fresh_containers
        )
        if candidate.gates["problem"]:
            candidate.drop_at("gates", "acceptance gate failed", candidate.gates["problem"])

    async def write(self, candidate: Candidate) -> None:
        task = generated_task(candidate, self.config, difficulty=Difficulty(candidate.solve["difficulty"]))
        export_harbor(
            replace(task, metadata={**task.metadata, "solve_rate": f"{candidate.solve['rate']:.3f}"}), self.output_dir
        )
