"""verl's agent loop for terminal tasks: the evaluation's own episode driver (``run_episode``), with a
token-level policy session on verl's rollout servers.

One trajectory per call of ``run``: fetch the task from the run's task store (hash-checked), run the
episode in its sandbox (the model's token ids kept exactly as generated, observations tokenised by
``terminal_rl.agent.tokens`` with mask 0, in the ``agent.history`` mode), verify, remove the sandbox,
then wait at the group barrier, where the group's rewards are decided together (judge, fallbacks,
masking). Nothing a session does can keep its group from being decided: every failure becomes an
infrastructure termination, the session always reaches the barrier, and the barrier itself times out.

Returns verl's v1 multi-output form: ``append`` gives one ``AgentLoopOutput``, ``per_turn`` one per
model turn, every one carrying the trajectory's reward (verl 0.9.1 puts each output under key
``{uid}_{session}_{i}`` and, for GRPO, computes the advantage on a session's last output and copies
it to the others: ``trainer/ppo/v1/agent_loop_tq.py`` l. 172-193, ``trainer/ppo/v1/utils.py`` l. 148-217).
A masked group's outputs have an all-zero loss mask: verl copies its loss mask from ``response_mask``
(``agent_loop_tq.py`` l. 199), so they add nothing to the loss's token count either.
``credit.mask_truncated`` does the same for a trajectory cut off by ``max_turns`` or the context. With
``algorithm=mt_grpo`` each output also carries its model turns' spans and per-turn rewards for the
estimator (``advantages.py``).

Per worker process (all sessions of a prompt run in one worker and one event loop) the loop keeps
one sandbox factory, one tokenizer wrapper and one group barrier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.context import elided_observations
from terminal_rl.agent.policies.base import Policy, PolicySession
from terminal_rl.agent.policies.token_session import Generation, TokenSession
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.reference import ReferenceChanges
from terminal_rl.agent.runner import episode_deadline_sec, run_episode
from terminal_rl.agent.tokens import ChatTokenizer, History, SequenceLimits, TokenSample, prompt_digest
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.config import to_dataclass
from terminal_rl.filtering.variance import filter_signal, lacks_signal
from terminal_rl.integrations.verl.advantages import MT_GRPO
from terminal_rl.integrations.verl.curriculum import run_schedule
from terminal_rl.integrations.verl.services import (
    generation_pauses,
    judge_context,
    judge_group_via_actor,
    ledger,
    reward_mix_for,
)
from terminal_rl.judge.service import JudgeConfig
from terminal_rl.rewards.fixture_guard import FixtureGuard, forged_inputs
from terminal_rl.rewards.turn_credit import TurnCredit, turn_facts, turn_rewards
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.tasks.store import TaskRef, TaskStore
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.training.group_scoring import GroupBarrier, GroupScores, score_rollout_group
from terminal_rl.training.metrics import RolloutInfo
from terminal_rl.training.rollout_context import RolloutContext
from terminal_rl.training.step_ledger import GroupRecord

log = logging.getLogger(__name__)
LOOP_NAME = "terminal_agent"


class _WorkerState:
    """What the sessions of one worker process share (created on first use, in its event loop), typed
    from verl's config as verl hands it to the agent loop (``AgentLoopBase.config``: the run's composed
    config, our sections included), once, here."""

    def __init__(self, verl_config: DictConfig, tokenizer):
        self.run = RunContext.from_config(verl_config.run)
        self.sandbox = SandboxConfig.from_node(verl_config.sandbox)
        self.factory = SandboxFactory(self.sandbox, self.run)
        self.agent = AgentConfig.from_node(verl_config.agent)
        thinking = verl_config.data.get("apply_chat_template_kwargs", {}).get("enable_thinking", True)
        self.chat = ChatTokenizer(tokenizer, bool(thinking))
        self.protocol = make_protocol(self.agent.protocol)
        self.schedule, _ = run_schedule(verl_config.data)
        self.default_limits = task_set_config(verl_config.task_set).limits
        self.turn_credit = to_dataclass(verl_config.credit.turn, TurnCredit)
        # Only the mt_grpo estimator reads turn spans and turn rewards (advantages.py).
        self.turn_level = verl_config.algorithm.adv_estimator == MT_GRPO
        # Async training pauses model calls while the actor trains: episode budgets and the barrier
        # leave those pauses out (training/generation_pauses.py); sync training never pauses one.
        self.pauses = None
        self.pausing = verl_config.trainer.v1.trainer_mode != "sync"
        self.barrier = GroupBarrier(self._score, self.paused_between if self.pausing else None)
        self.fixture_guard = FixtureGuard.of(verl_config.fixture_guard)
        self.judge = to_dataclass(verl_config.judge, JudgeConfig)
        self.reward_mix = verl_config.reward_mix
        self.online_variance = verl_config.data_filter.kind == "online_variance"
        self.references = ReferenceChanges(self.factory, self.run.shared_dir / "reference_changes")
        # The run's step ledger (refills across workers, every group before filtering); a Ray actor.
        self.ledger = None
        self._started = False
        self._starting: asyncio.Lock | None = None

    async def start(self) -> None:
        """The worker's sandbox factory, entered once: the sessions of a worker (up to a group's
        worth at once) all call this first, and only one of them may enter it."""
        if self._started:
            return
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if not self._started:
                await self.factory.__aenter__()
                self._started = True

    async def paused_between(self, start: float, end: float) -> float:
        self.pauses = self.pauses or generation_pauses(self.run.run_id)
        return await self.pauses.paused_between.remote(start, end)

    async def reference_changes(self, task, deadline_sec: float) -> list[str] | None:
        """What ``task``'s reference solution changes, for the fixture guard (None: unknown, also
        when measuring it takes longer than an episode may)."""
        try:
            return await asyncio.wait_for(self.references.of(task), deadline_sec)
        except Exception:  # never the episode's failure: the guard then only flags
            log.warning(
                "the reference solution of %s could not be measured within %.0fs", task.id, deadline_sec, exc_info=True
            )
            return None

    async def _score(self, trajectories: list[Trajectory]) -> GroupScores:
        context = RolloutContext.of(trajectories[0])
        judge = judge_group_via_actor(self.judge, self.run.run_id)
        scores = await score_rollout_group(
            trajectories,
            context.reward_mix,
            self.agent.limits.max_turns,
            judge,
            self.judge.only_unseparated_groups,
            self.fixture_guard,
        )
        if context.split != "train":
            return scores
        tests = scores.test_scores
        self.ledger = self.ledger or ledger(self.run.run_id)
        if self.online_variance:
            if not scores.masked and lacks_signal(scores.rewards, tests, scores.weights.get("judge", 0.0)):
                scores.filtered = await self.ledger.claim_refill.remote()
            scores.filter_signal = filter_signal(len(trajectories), scores.filtered)
        await self.ledger.record.remote(
            context.uid, GroupRecord(context.task_id, context.stage, tests, scores.masked, scores.filtered)
        )
        return scores


_STATE: _WorkerState | None = None


def reply_versions(extra_fields: dict) -> tuple[int, int] | None:
    """The first and last weights versions of one reply, as verl's client reports them: a reply resumed
    on new weights carries both (``llm_server.py`` ``FullyAsyncLLMServerClient``, l. 321-349), a plain
    one its server's ``global_steps`` (l. 160-162)."""
    last = extra_fields.get("max_global_steps", extra_fields.get("global_steps"))
    if last is None:
        return None
    first = extra_fields.get("min_global_steps")
    return (last if first is None else int(first)), int(last)


class PausedTime:
    """Seconds one episode's model calls spent waiting for generation to resume: each call's overlap
    with the run's generation pauses, the call under way included (``paused_between`` None: sync
    training, never any). A pause that cannot be read counts as none (logged): bookkeeping never
    fails an episode."""

    def __init__(self, paused_between):
        self._between, self._counted, self._call_started = paused_between, 0.0, None

    @contextlib.asynccontextmanager
    async def call(self):
        self._call_started = time.time()
        try:
            yield
        finally:
            paused = await self._paused(self._call_started, time.time())
            self._counted, self._call_started = self._counted + paused, None

    async def seconds(self) -> float:
        started = self._call_started
        return self._counted + (await self._paused(started, time.time()) if started is not None else 0.0)

    async def _paused(self, start: float, end: float) -> float:
        if self._between is None:
            return 0.0
        try:
            return await self._between(start, end)
        except Exception:
            log.warning("generation pauses unreadable: counted as none", exc_info=True)
            return 0.0


class _OneSession(Policy):
    """The policy of one trajectory: the token session this loop reads its samples from afterwards."""

    def __init__(self, session: TokenSession, name: str):
        self._session, self.name = session, name

    def session(self, task) -> PolicySession:
        return self._session


@register(LOOP_NAME)
class TerminalAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        global _STATE
        if _STATE is None:
            _STATE = _WorkerState(self.config, self.tokenizer)
        self.state = _STATE
        self.limits = SequenceLimits(self.rollout_config.prompt_length, self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> list[AgentLoopOutput]:
        state = self.state
        extra_info = kwargs["extra_info"]
        validating = extra_info.get("split") == "val"
        rollout = self.config.actor_rollout_ref.rollout
        group_size = int(rollout.val_kwargs.n if validating else rollout.n)
        uid, index = str(kwargs.get("uid", uuid.uuid4().hex)), int(kwargs.get("session_id", 0))
        stage = int(extra_info.get("curriculum_stage", 0))
        paused = PausedTime(state.paused_between if state.pausing else None)
        session = TokenSession(state.chat, state.agent.history, self._generator(sampling_params, paused), self.limits)
        trajectory = Trajectory(extra_info["task_id"], extra_info["content_hash"], state.protocol.prompt_id, LOOP_NAME)
        grace = state.sandbox.container.grace_sec
        deadline, judged = episode_deadline_sec(state.default_limits, grace), {}
        try:
            await state.start()
            task = TaskStore(Path(extra_info["task_store"])).get(
                TaskRef(extra_info["task_id"], extra_info["content_hash"])
            )
            deadline, judged = episode_deadline_sec(task.limits, grace), judge_context(task)
            trajectory = await run_episode(
                task,
                state.factory,
                state.protocol,
                _OneSession(session, LOOP_NAME),
                state.agent.limits,
                f"{uid[:8]}-{index}",
                deadline,
                paused.seconds,
            )
            context = trajectory.metadata.get("context", {})
            context["elided_tokens"] = sum(
                len(state.chat.encode(text)) - len(state.chat.encode(stub))
                for text, stub in elided_observations(trajectory.turns, context.get("elided_turns", 0))
            )
            # The reference's changes decide only an episode that rewrote an input its tests read.
            if state.fixture_guard is not FixtureGuard.OFF and forged_inputs(trajectory.verification or {}, None):
                trajectory.verification["reference_changes"] = await state.reference_changes(task, deadline)
        except Exception as error:  # before the episode could run (task store, engine): an infrastructure failure
            log.warning("session %s/%d of %s could not run", uid, index, extra_info["task_id"], exc_info=True)
            trajectory.termination = Termination.SANDBOX_ERROR.value
            trajectory.termination_detail = f"{type(error).__name__}: {error}"
        RolloutContext(
            task_id=extra_info["task_id"],
            uid=uid,
            session=index,
            split="val" if validating else "train",
            global_steps=int(kwargs.get("global_steps", 0)),
            stage=stage,
            reward_mix=reward_mix_for(state.schedule, state.reward_mix, extra_info["difficulty"], stage, validating),
            **judged,
        ).stamp(trajectory)
        scores, position = await state.barrier.submit(uid, group_size, index, trajectory, deadline + grace)
        samples = self._samples(session, trajectory)
        self._record(trajectory, scores, position, samples)
        return self._outputs(samples, trajectory, scores, position, kwargs, bool(sampling_params.get("logprobs")))

    def _generator(self, sampling_params: dict[str, Any], paused: PausedTime):
        """The session's model: verl's rollout servers, one request id per trajectory (prefix cache)."""
        request_id = uuid.uuid4().hex

        async def generate(prompt_ids: list[int], max_tokens: int) -> Generation:
            async with paused.call():
                output = await self.server_manager.generate(
                    request_id, prompt_ids=prompt_ids, sampling_params={**sampling_params, "max_tokens": max_tokens}
                )
            logprobs = None if output.log_probs is None else list(output.log_probs)
            return Generation(list(output.token_ids), logprobs, reply_versions(output.extra_fields))

        return generate

    def _samples(self, session: TokenSession, trajectory: Trajectory) -> list[TokenSample]:
        """The session's training samples, responses cut at verl's response length."""
        chat, length = self.state.chat, self.rollout_config.response_length
        samples = [s for s in session.history.samples if s.response_ids] if session.history is not None else []
        samples = without_untrained_tail(samples)
        if not samples:  # the model never answered: one masked token keeps verl's shapes valid
            prompt = (
                session.history.prompt_ids()
                if session.history is not None
                else chat.prompt_ids([{"role": "user", "content": trajectory.task_id}])
            )
            samples = [TokenSample(prompt)]
            samples[0].add([chat.eos_id], 0)
        return [s.truncated(length) for s in samples]

    def _outputs(
        self,
        samples: list[TokenSample],
        trajectory: Trajectory,
        scores: GroupScores,
        position: int,
        kwargs: dict,
        logprobs_requested: bool,
    ) -> list[AgentLoopOutput]:
        """One output per training sample of the session (masked group: loss mask all zero)."""
        # A trajectory with no model turn ran under the weights the step started with.
        fallback_version = int(kwargs.get("global_steps", 1)) - 1
        truncation_masked = self._truncation_masked(trajectory)
        info = RolloutInfo.of(trajectory, scores, position, truncation_masked)
        extra: dict[str, Any] = {"reward_extra_info": info.extra_info()}
        turn_level = self.state.turn_level
        if turn_level:
            extra["turn_rewards"] = turn_rewards(
                scores.rewards[position],
                turn_facts([asdict(t) for t in trajectory.turns]),
                self.state.agent.limits.max_turns,
                self.state.turn_credit,
            )
        outputs = []
        for sample in samples:
            mask = [0] * len(sample.response_mask) if scores.masked or truncation_masked else sample.response_mask
            first = fallback_version if sample.first_version is None else sample.first_version
            last = fallback_version if sample.last_version is None else sample.last_version
            outputs.append(
                AgentLoopOutput(
                    prompt_ids=sample.prompt_ids,
                    response_ids=sample.response_ids,
                    response_mask=mask,
                    response_logprobs=sample.response_logprobs if logprobs_requested else None,
                    reward_score=scores.rewards[position],
                    num_turns=len(trajectory.messages) or 1,
                    metrics={},
                    extra_fields={
                        **extra,
                        **({"turn_spans": sample.turn_spans} if turn_level else {}),
                        "min_global_steps": first,
                        "max_global_steps": last,
                    },
                )
            )
        return outputs

    def _truncation_masked(self, trajectory: Trajectory) -> bool:
        """``credit.mask_truncated``: a trajectory cut off by the turn limit or the context trains no token."""
        return (
            bool(self.config.credit.mask_truncated)
            and trajectory.termination is not None
            and Termination(trajectory.termination).truncated
        )

    def _record(self, trajectory: Trajectory, scores: GroupScores, position: int, samples: list[TokenSample]) -> None:
        """Append the trajectory, its components and weights, and its training samples' token ids and
        masks (the mask marks the model's tokens; a masked group, and with ``credit.mask_truncated`` a
        truncated trajectory, trained none of them: ``masked`` and ``loss_masked`` say so) to the
        run's rollout log (one file per worker process and step, so concurrent writers never interleave)."""
        trajectory.metadata["reward_mix"] = dict(scores.weights)
        trajectory.metadata["reward"] = scores.rewards[position]
        trajectory.metadata["components"] = {k: v.score for k, v in scores.components[position].items()}
        trajectory.metadata["judge"] = scores.judgements[position]
        trajectory.metadata["masked"] = scores.mask_reason
        trajectory.metadata["loss_masked"] = "truncated" if self._truncation_masked(trajectory) else None
        trajectory.metadata["filtered"] = scores.filtered
        trajectory.metadata["history"] = self.state.agent.history
        trajectory.metadata["samples"] = [_logged_sample(s, self.state.agent.history) for s in samples]
        folder = self.state.run.log_dir / "rollouts"
        folder.mkdir(parents=True, exist_ok=True)
        context = RolloutContext.of(trajectory)
        name = f"{context.split}_step{context.global_steps:06d}.{os.getpid()}.jsonl"
        with (folder / name).open("a", encoding="utf-8") as out:
            out.write(trajectory.to_json() + "\n")


def without_untrained_tail(samples: list[TokenSample]) -> list[TokenSample]:
    """The samples less trailing ones with no model token, unless one would be left with none. verl
    reads a session's advantage at its last row's first loss token (``trainer/ppo/v1/utils.py``
    l. 177-209: the last row per session, then ``response_mask.argmax``): a last row with none (a per_turn turn of
    nothing but the closing token) would give
    every turn of the session the advantage 0."""
    kept = list(samples)
    while len(kept) > 1 and not any(kept[-1].response_mask):
        kept.pop()
    return kept


def _logged_sample(sample: TokenSample, history: str) -> dict[str, Any]:
    """A training sample as the rollout log keeps it. per_turn prompts are the whole rendered history
    (turns^2/2 tokens an episode, 0.5-1 GB a step at production lengths): their length, digest and
    turn instead, rebuilt and checked from the messages by whoever reads them (datasets). Beside them,
    the first and last weights versions the rollout server stamped on the sample's replies (null: no
    model turn, or a server that stamps none), and each model turn's own (a turn resumed on new
    weights spans two)."""
    tokens = {"response_ids": sample.response_ids, "response_mask": sample.response_mask}
    versions = {
        "weights_versions": [sample.first_version, sample.last_version],
        "turn_versions": [list(v) if v else None for v in sample.turn_versions],
    }
    if history != History.PER_TURN:
        return {"prompt_ids": sample.prompt_ids, **tokens, **versions}
    return {
        "prompt_tokens": len(sample.prompt_ids),
        "prompt_sha256": prompt_digest(sample.prompt_ids),
        "turn": sample.turn,
        **tokens,
        **versions,
    }
