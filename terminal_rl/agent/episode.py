"""The episode: a policy-agnostic state machine over one task in one sandbox.

``start()`` gives the initial chat messages; ``step(model_text)`` parses the model's turn, runs its
actions in order (stopping at the first failure or at ``finish``) and returns the observation
message, or ends the episode. Any driver feeds it: the evaluation's text-level litellm policy, a
scripted policy, or verl's token-level agent loop. Nothing here knows about tokens except the
counts a driver passes in.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from docker.errors import DockerException

from terminal_rl.agent.actions import Action
from terminal_rl.agent.context import ContextConfig
from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.agent.tools import Toolbox
from terminal_rl.agent.trajectory import Termination, Trajectory, Turn
from terminal_rl.sandbox.runtime.sandbox import Sandbox, SandboxError
from terminal_rl.sandbox.runtime.shell import SessionBroken
from terminal_rl.tasks.model import Task

# Infrastructure failures while acting: the sandbox, not the agent.
INFRASTRUCTURE_ERRORS = (SandboxError, SessionBroken, DockerException, ConnectionError, OSError)


@dataclass(frozen=True)
class EpisodeLimits:
    """The ``agent`` config group's limits (see conf/agent/)."""

    max_turns: int
    # Tokens the model may write in one turn, and in the whole context (prompt + all turns).
    max_tokens_per_turn: int
    max_context_tokens: int
    # Consecutive unparseable turns that end the episode.
    max_consecutive_parse_errors: int
    # Wall-clock budget in seconds; 0 means the task's own agent timeout.
    wall_clock_sec: float = 0.0
    # How an episode keeps within max_context_tokens (agent.context: none | elide | summarize).
    context: ContextConfig = ContextConfig()


@dataclass(frozen=True)
class StepOutcome:
    observation: dict[str, str] | None
    done: bool


class Episode:
    def __init__(
        self, task: Task, sandbox: Sandbox, protocol: ActionProtocol, limits: EpisodeLimits, policy_name: str = ""
    ):
        self.task = task
        self.sandbox = sandbox
        self.protocol = protocol
        self.limits = limits
        self.toolbox = Toolbox(sandbox)
        self.trajectory = Trajectory(task.id, task.content_hash, protocol.prompt_id, policy_name)
        self._budget_sec = limits.wall_clock_sec or task.limits.agent_timeout_sec
        self._started = 0.0
        self._left_out_sec = 0.0
        self._parse_errors_in_a_row = 0

    @property
    def done(self) -> bool:
        return self.trajectory.termination is not None

    @property
    def remaining_sec(self) -> float:
        return self._budget_sec - (time.monotonic() - self._started - self._left_out_sec)

    def leave_out(self, seconds: float) -> None:
        """``seconds`` of the episode so far were not its own (model calls waiting for generation to
        resume after a weights update): the wall-clock budget does not count them."""
        self._left_out_sec = seconds

    def turn_max_tokens(self, context_tokens: int) -> int:
        """Tokens the next turn may use: the per-turn cap or what is left of the context budget."""
        return max(0, min(self.limits.max_tokens_per_turn, self.limits.max_context_tokens - context_tokens))

    async def start(self) -> list[dict[str, str]]:
        self._started = time.monotonic()
        self.trajectory.started_at = time.time()
        screen = ""
        if self.protocol.uses_terminal:
            screen = await self.sandbox.terminal.screen()
        self.trajectory.messages = self.protocol.initial_messages(self.task.prompt, screen)
        return list(self.trajectory.messages)

    async def step(
        self, model_text: str, *, context_tokens: int | None = None, completion_tokens: int | None = None
    ) -> StepOutcome:
        """Feed the model's turn; returns the observation message or the end of the episode.

        Args:
            model_text: the model's whole reply for this turn.
            context_tokens: tokens in the context after this reply, when the driver knows them.
            completion_tokens: tokens of this reply, when known.
        """
        if self.done:
            raise RuntimeError(f"episode already ended ({self.trajectory.termination})")
        started_at, started = time.time(), time.monotonic()
        self.trajectory.messages.append({"role": "assistant", "content": model_text})
        turn = Turn(
            len(self.trajectory.turns),
            model_text,
            [],
            [],
            None,
            None,
            started_at,
            0.0,
            context_tokens,
            completion_tokens,
        )
        self.trajectory.turns.append(turn)
        if self.remaining_sec <= 0:
            return self._finish_turn(
                turn, started, Termination.TIMEOUT, f"wall-clock budget {self._budget_sec:g}s spent"
            )
        parsed = self.protocol.parse(model_text)
        if not parsed.ok:
            turn.parse_error = parsed.error
            self._parse_errors_in_a_row += 1
            if self._parse_errors_in_a_row >= self.limits.max_consecutive_parse_errors:
                return self._finish_turn(turn, started, Termination.PARSE_ERRORS, parsed.error)
            return self._observe(turn, started, parsed.error)
        self._parse_errors_in_a_row = 0
        turn.actions = [{"tool": a.tool, "args": a.args} for a in parsed.actions]
        results = []
        try:
            for action in parsed.actions:
                result = await self.toolbox.run(self._within_budget(action))
                results.append(result)
                turn.results.append(asdict(result))
                if not result.ok or result.finished:
                    break
        except INFRASTRUCTURE_ERRORS as error:
            return self._finish_turn(turn, started, Termination.SANDBOX_ERROR, f"{type(error).__name__}: {error}")
        if results and results[-1].finished:
            return self._finish_turn(turn, started, Termination.FINISHED, results[-1].output)
        observation = self.protocol.render(results, len(parsed.actions) - len(results))
        if self.remaining_sec <= 0:
            return self._finish_turn(
                turn, started, Termination.TIMEOUT, f"wall-clock budget {self._budget_sec:g}s spent"
            )
        return self._observe(turn, started, observation)

    def end(self, reason: Termination, detail: str = "") -> None:
        """End the episode from outside (the driver: context exhausted, policy failure)."""
        if not self.done:
            self.trajectory.termination = reason.value
            self.trajectory.termination_detail = detail
            self.trajectory.duration_sec = time.monotonic() - self._started

    def _observe(self, turn: Turn, started: float, observation: str) -> StepOutcome:
        turn.observation = observation
        turn.duration_sec = time.monotonic() - started
        if len(self.trajectory.turns) >= self.limits.max_turns:
            self.end(Termination.MAX_TURNS, f"{self.limits.max_turns} turns")
            return StepOutcome(None, True)
        message = {"role": "user", "content": observation}
        self.trajectory.messages.append(message)
        return StepOutcome(message, False)

    def _finish_turn(self, turn: Turn, started: float, reason: Termination, detail: str) -> StepOutcome:
        turn.duration_sec = time.monotonic() - started
        self.end(reason, detail)
        return StepOutcome(None, True)

    def _within_budget(self, action: Action) -> Action:
        """Commands may not outlive the episode's wall-clock budget."""
        if action.tool != "bash":
            return action
        allowed = max(1, int(self.remaining_sec))
        return Action("bash", {**action.args, "timeout_secs": min(action.args["timeout_secs"], allowed)})
