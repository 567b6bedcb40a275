"""verl's agent loop for terminal tasks: our Episode driven at the token level by verl's rollout servers.

One trajectory per call of ``run``: fetch the task from the run's task store (hash-checked), start its
sandbox, alternate the model's turns (token ids kept exactly as generated) and the environment's
observations (tokenised by ``terminal_rl.agent.tokens``, mask 0), verify, remove the sandbox, then
wait at the group barrier, where the group's rewards are decided together (judge, fallbacks, masking).

Per worker process (all sessions of a prompt run in one worker and one event loop) the loop keeps
one sandbox factory, one tokenizer wrapper and one group barrier.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from terminal_rl.agent.episode import INFRASTRUCTURE_ERRORS, Episode, EpisodeLimits
from terminal_rl.agent.metrics import behaviour_metrics
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.tokens import ChatTokenizer, TokenConversation
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.config import to_dataclass
from terminal_rl.curriculum.schedule import schedule_from_config
from terminal_rl.filtering.variance import filter_signal, group_variances
from terminal_rl.integrations.verl.services import judge_context, judge_group_via_actor, reward_mix_for
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.sandbox.verifier import verify
from terminal_rl.tasks.store import TaskRef, TaskStore
from terminal_rl.training.group_scoring import GroupBarrier, GroupScores, score_rollout_group

log = logging.getLogger(__name__)
LOOP_NAME = "terminal_agent"


class _WorkerState:
    """What the sessions of one worker process share (created on first use, in its event loop)."""

    def __init__(self, cfg: DictConfig, tokenizer):
        self.cfg = cfg
        self.run = RunContext.from_config(cfg.run)
        self.factory = SandboxFactory(SandboxConfig.from_node(cfg.sandbox), self.run)
        self.chat = ChatTokenizer(tokenizer, bool(cfg.data.get("apply_chat_template_kwargs", {}).get("enable_thinking", True)))
        self.protocol = make_protocol(cfg.agent.protocol)
        self.schedule = schedule_from_config(cfg.curriculum)
        agent = {k: v for k, v in cfg.agent.items() if k not in ("protocol", "loop_name")}
        self.limits = to_dataclass(agent, EpisodeLimits)
        self.barrier = GroupBarrier(self._score)
        self.data_filter = cfg.data_filter
        # Groups dropped by online_variance, per training step (bounded by data_filter.max_refills).
        self.refills: dict[int, int] = {}
        self._started = False

    async def start(self) -> None:
        if not self._started:
            await self.factory.__aenter__()
            self._started = True

    async def _score(self, trajectories: list[Trajectory]) -> GroupScores:
        meta = trajectories[0].metadata
        judge = judge_group_via_actor(self.cfg, self.run.run_id)
        scores = await score_rollout_group(trajectories, meta["reward_mix"], self.limits.max_turns, judge)
        if self.data_filter.kind == "online_variance" and meta["split"] == "train":
            step = meta["global_steps"]
            tests = [c["tests"].score or 0.0 for c in scores.components]
            scores.filter_signal, scores.filtered = filter_signal(
                scores.rewards, tests, scores.weights.get("judge", 0.0), self.refills.get(step, 0),
                self.data_filter.max_refills)
            self.refills[step] = self.refills.get(step, 0) + scores.filtered
        return scores


_STATE: _WorkerState | None = None


@register(LOOP_NAME)
class TerminalAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        global _STATE
        if _STATE is None:
            _STATE = _WorkerState(self.config, self.tokenizer)
        self.state = _STATE
        self.response_length = self.rollout_config.response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        state = self.state
        await state.start()
        extra_info = kwargs["extra_info"]
        validating = extra_info.get("split") == "val"
        rollout = self.config.actor_rollout_ref.rollout
        group_size = int(rollout.val_kwargs.n if validating else rollout.n)
        uid, session = str(kwargs.get("uid", uuid.uuid4().hex)), int(kwargs.get("session_id", 0))
        task = TaskStore(Path(extra_info["task_store"])).get(TaskRef(extra_info["task_id"], extra_info["content_hash"]))
        stage = int(extra_info.get("curriculum_stage", 0))
        mix = reward_mix_for(state.schedule, self.config, task, stage, validating)

        conversation, logprobs, extra_fields = None, [], {}
        trajectory = Trajectory(task.id, task.content_hash, state.protocol.prompt_id, LOOP_NAME)
        try:
            async with state.factory.task_sandbox(task, rollout_id=f"{uid[:8]}-{session}") as sandbox:
                episode = Episode(task, sandbox, state.protocol, state.limits, LOOP_NAME)
                trajectory = episode.trajectory
                messages = await episode.start()
                conversation = TokenConversation.start(state.chat, messages)
                request_id = uuid.uuid4().hex
                while not episode.done:
                    # The episode's budget (min(per turn, context left)) within verl's padded response length.
                    budget = min(episode.turn_max_tokens(len(conversation.ids)),
                                 self.response_length - len(conversation.response_ids))
                    if budget <= 0:
                        episode.end(Termination.CONTEXT_EXHAUSTED, f"{len(conversation.response_ids)} response tokens")
                        break
                    output = await self.server_manager.generate(
                        request_id, prompt_ids=conversation.ids, sampling_params={**sampling_params, "max_tokens": budget})
                    extra_fields = extra_fields or dict(output.extra_fields)
                    before = len(conversation.response_ids)
                    conversation.add_model_turn(list(output.token_ids))
                    added = len(conversation.response_ids) - before
                    turn_logprobs = list(output.log_probs or [0.0] * len(output.token_ids))
                    logprobs += (turn_logprobs + [0.0] * added)[:added]
                    text = state.chat.decode(list(output.token_ids))
                    outcome = await episode.step(text, context_tokens=len(conversation.ids),
                                                 completion_tokens=len(output.token_ids))
                    if outcome.observation is not None:
                        observed = conversation.add_observation([outcome.observation])
                        logprobs += [0.0] * len(observed)
                if not Termination(trajectory.termination).infrastructure:
                    trajectory.verification = (await verify(sandbox, task)).to_dict()
        except INFRASTRUCTURE_ERRORS as error:
            trajectory.termination = Termination.SANDBOX_ERROR.value
            trajectory.termination_detail = f"{type(error).__name__}: {error}"
        trajectory.metadata.update(reward_mix=mix, stage=stage, global_steps=kwargs.get("global_steps", 0),
                                   split="val" if validating else "train", uid=uid, session=session,
                                   **judge_context(task))
        scores, position = await state.barrier.submit(uid, group_size, session, trajectory)
        reward = scores.rewards[position]
        self._record(trajectory, scores, position)
        if conversation is None:  # the sandbox never came up: one masked token keeps verl's shapes valid
            conversation = TokenConversation.start(state.chat, [{"role": "user", "content": task.prompt}])
            conversation.response_ids, conversation.response_mask, logprobs = [state.chat.eos_id], [0], [0.0]
        extra_fields["reward_extra_info"] = reward_extra_info(trajectory, scores, position)
        length = self.response_length
        return AgentLoopOutput(
            prompt_ids=conversation.prompt_ids, response_ids=conversation.response_ids[:length],
            response_mask=conversation.response_mask[:length], response_logprobs=logprobs[:length],
            reward_score=reward, num_turns=len(trajectory.messages) or 1, metrics={}, extra_fields=extra_fields,
        )

    def _record(self, trajectory: Trajectory, scores: GroupScores, position: int) -> None:
        """Append the trajectory, its components and weights to the run's rollout log (one file per
        worker process and step, so concurrent writers never interleave)."""
        trajectory.metadata["reward_mix"] = dict(scores.weights)
        trajectory.metadata["reward"] = scores.rewards[position]
        trajectory.metadata["components"] = {k: v.score for k, v in scores.components[position].items()}
        trajectory.metadata["judge"] = scores.judgements[position]
        trajectory.metadata["masked"] = scores.mask_reason
        folder = self.state.run.log_dir / "rollouts"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{trajectory.metadata['split']}_step{trajectory.metadata['global_steps']:06d}.{os.getpid()}.jsonl"
        with (folder / name).open("a", encoding="utf-8") as out:
            out.write(trajectory.to_json() + "\n")


def reward_extra_info(trajectory: Trajectory, scores: GroupScores, position: int) -> dict[str, float]:
    """Per-sample numbers the trainer aggregates into step metrics (numbers only: strings are dropped;
    never a key named "reward", which verl's validation reserves)."""
    info: dict[str, float] = {}
    for name, component in scores.components[position].items():
        if not component.missing:
            info[f"component_{name}"] = float(component.score)
    info.update({f"weight_{name}": float(w) for name, w in scores.weights.items()})
    info["masked"] = float(scores.masked)
    tests = [c["tests"].score or 0.0 for c in scores.components]
    info["variance_reward"], info["variance_tests"] = group_variances(scores.rewards, tests)
    info["zero_variance_reward"] = float(info["variance_reward"] == 0.0)
    info["zero_variance_tests"] = float(info["variance_tests"] == 0.0)
    if scores.filter_signal is not None:
        info["filter_signal"] = scores.filter_signal[position]
        info["filtered"] = float(scores.filtered)
    info["judge_fallback"] = float(scores.judge_fallback)
    info["stage"] = float(trajectory.metadata.get("stage", 0))
    # Validation reports these per data source: mean test score (val-core .../acc) and pass rate.
    info["acc"] = float((trajectory.verification or {}).get("score", 0.0))
    info["pass"] = float(info["acc"] == 1.0)
    for reason in Termination:
        info[f"end_{reason.value}"] = float(trajectory.termination == reason.value)
    info.update({f"behaviour_{k.replace('/', '_')}": float(v) for k, v in behaviour_metrics(trajectory).items()
                 if not k.startswith("tool/")})
    return info
