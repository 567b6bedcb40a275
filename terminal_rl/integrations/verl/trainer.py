"""verl's trainers with our step bookkeeping: the curriculum's step recorded from every group the
step consumed (trained on or evicted, before filtering) and saved inside the checkpoint, mini-batches
sized in sessions when a session returns one row per turn, and our per-step metrics (reward
components and weights, masked groups, terminations, behaviour, curriculum and judge figures, a small
table of trajectories).

``TerminalSteps`` is installed on verl's own trainers, in place of them in verl's registry: the
"sync" one (``rollouts=sync``) and the "colocate_async" one (``rollouts=async``: rollouts
keep running while the actor trains, verl's partial rollouts and staleness bound; its code paths
branch on the mode name, so the names stay verl's). Everything else is verl's own. Where this relies
on verl 0.9.1's order of work, the lines are cited (``verl/trainer/ppo/v1/trainer_base.py``, "TB").
"""

from __future__ import annotations

import json
import math
import numbers
import time
from pathlib import Path

import ray
import transfer_queue as tq
from omegaconf import open_dict
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
from verl.trainer.ppo.v1.trainer_colocate_async import PPOTrainerColocateAsync
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from terminal_rl.config import to_dataclass
from terminal_rl.integrations.verl.advantages import MT_GRPO, BatchTurns, turns_for_batch
from terminal_rl.integrations.verl.curriculum import run_curriculum
from terminal_rl.integrations.verl.services import generation_pauses, ledger
from terminal_rl.plot import plot_run
from terminal_rl.rewards.turn_credit import TurnCredit
from terminal_rl.training.checkpoints import enforce_retention
from terminal_rl.training.metrics import step_metrics
from terminal_rl.training.preemption import acknowledge, exchange_folder, save_requested
from terminal_rl.training.rollout_log import supersede

SAMPLE_ROWS = 4
LEDGER_FILE = "step_ledger.json"


def session_rows(keys: list[str]) -> list[int]:
    """Indices of each session's last row among TransferQueue keys ``{uid}_{session}_{i}`` (verl's
    format, ``agent_loop_tq.py`` l. 193): per-turn sessions have several rows, but count once."""
    last: dict[str, tuple[int, int]] = {}
    for row, key in enumerate(keys):
        session, index = key.rsplit("_", 1)
        if session not in last or last[session][0] < int(index):
            last[session] = (int(index), row)
    return sorted(row for _, row in last.values())


def mini_batch_prompts(rows: int, sessions_per_prompt: int, dp_size: int, mini_batches: int) -> int:
    """``actor.ppo_mini_batch_size`` (in prompts, as verl reads it) that splits ``rows`` into at most
    ``mini_batches`` mini-batches: verl multiplies it by ``rollout.n`` into rows (TB l. 1829-1830), pads
    the batch to a multiple of that (TB l. 1589-1621) and takes one optimizer step per mini-batch. With
    one row per session this is the configured size; with one row per turn it grows with the rows."""
    per_prompt_block = sessions_per_prompt * dp_size
    return dp_size * -(-rows // (mini_batches * per_prompt_block))


def prompt_tags(partition_id: str = "train") -> dict[str, dict]:
    """The group ids (prompt keys) TransferQueue still holds, with their tags: issued and not yet
    consumed. verl clears a group's prompt key when a step samples it (``replay_buffer.py``
    ``_materialize_batch``, l. 394-397) or evicts it (filtered, stale, failed)."""
    listed = tq.kv_list(partition_id) or {}
    return {key: tag for key, tag in listed.get(partition_id, {}).items() if tag.get("is_prompt", False)}


def live_prompts(partition_id: str = "train") -> set[str]:
    return set(prompt_tags(partition_id))


def in_flight_prompts(partition_id: str = "train") -> set[str]:
    """Issued groups still generating (verl's prompt status ``pending`` or ``running``)."""
    return {key for key, tag in prompt_tags(partition_id).items() if tag.get("status") in ("pending", "running")}


class TerminalSteps:
    """Our bookkeeping on one of verl's v1 trainers (mixed in before it)."""

    def on_step_begin(self):
        ray.get(ledger(self._run_id()).refills_count_for.remote(self.global_steps))
        super().on_step_begin()

    def step(self, metrics, timing_raw):
        """verl's step (rollouts, then the update), then the curriculum's record of the groups the step
        consumed. The checkpoint is saved right after this returns (TB l. 476-481), so the curriculum
        state it saves includes this step; metrics come later, after validation (TB l. 486-498)."""
        batch = super().step(metrics, timing_raw)
        groups = ray.get(ledger(self._run_id()).take_consumed.remote(live_prompts()))
        metrics["curriculum/groups_consumed"] = len(groups)
        curriculum = run_curriculum(self.config.data)
        curriculum.record_step([(g.task_id, g.stage, score) for g in groups if not g.masked for score in g.test_scores])
        return batch

    def on_step_end(self):
        """verl's end of a step (weights to the rollout servers), then a save the job's head asked for
        on Slurm's signal (``training/preemption.py``), unless this step's checkpoint is already there."""
        from terminal_rl.run_context import RunContext

        super().on_step_end()
        self._generation_resumed()
        folder = exchange_folder(RunContext.from_config(self.config.run))
        if save_requested(folder):
            marker = Path(self.config.trainer.default_local_dir) / "latest_checkpointed_iteration.txt"
            if not (marker.is_file() and marker.read_text().strip() == str(self.global_steps)):
                self._save_checkpoint()
            acknowledge(folder, self.global_steps)
            print(f"saved step {self.global_steps} for the job's requeue", flush=True)

    def on_sample_end(self):
        """The step has its batch. In async mode a group dropped from here on is evicted when the next
        step samples, and its refill counts there; verl now pauses generation until the update is done.
        The pause is recorded from here (episode budgets and group barriers leave it out), with the
        groups still generating while the actor trains."""
        if self.trainer_mode != "sync":
            ray.get(ledger(self._run_id()).refills_count_for.remote(self.global_steps + 1))
            self._in_flight = len(in_flight_prompts())
            ray.get(generation_pauses(self._run_id()).pause.remote(time.time()))
        super().on_sample_end()

    def _generation_resumed(self) -> None:
        if self.trainer_mode != "sync":
            ray.get(generation_pauses(self._run_id()).resume.remote(time.time()))

    def _reissue_inflight_prompts(self, partition_id: str = "train") -> int:
        """The start of the training loop (TB l. 454-456): verl generates again the groups a checkpoint
        saved in flight (async mode, TB l. 910-946), and the groups of this step on. What a killed
        attempt logged of either leaves the rollout log first (``training/rollout_log.py``), so every
        reader counts each group once."""
        reissued = in_flight_prompts(partition_id) if self.trainer_mode != "sync" else set()
        folder = Path(self.config.trainer.default_local_dir).parent / "logs" / "rollouts"
        moved = supersede(folder, reissued, self.global_steps)
        if moved:
            print(f"resume: {moved} episodes a killed attempt logged after its checkpoint set aside", flush=True)
        return super()._reissue_inflight_prompts(partition_id)

    def _save_checkpoint(self):
        """The curriculum state goes into the checkpoint folder first: verl writes
        ``latest_checkpointed_iteration.txt`` last (TB l. 1010-1024), so a checkpoint a resume can
        find always has it. Then the run keeps ``trainer.max_actor_ckpt_to_keep`` on disk."""
        root = Path(self.config.trainer.default_local_dir)
        folder = root / f"global_step_{self.global_steps}"
        folder.mkdir(parents=True, exist_ok=True)
        run_curriculum(self.config.data).save(folder)
        (folder / LEDGER_FILE).write_text(json.dumps(ray.get(ledger(self._run_id()).state.remote())))
        super()._save_checkpoint()
        # verl's retention forgets what an earlier attempt of the run saved (training/checkpoints.py).
        enforce_retention(root, self.config.trainer.get("max_actor_ckpt_to_keep"))
        plot_run(root.parent, warn=print)

    def _load_checkpoint(self):
        """verl's resume, then the curriculum's state and the ledger's groups scored and not yet trained
        (async mode restores those groups from TransferQueue, TB l. 900-908)."""
        super()._load_checkpoint()
        saved = {}
        if self.global_steps:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
            run_curriculum(self.config.data).restore(folder)
            if (folder / LEDGER_FILE).is_file():
                saved = json.loads((folder / LEDGER_FILE).read_text())
        ray.get(ledger(self._run_id()).restore.remote(saved))

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        """Mini-batches sized in sessions: set verl's mini-batch size for this step's row count before
        verl pads the batch and later splits it (it reads the setting in both places)."""
        actor = self.config.actor_rollout_ref.actor
        if not hasattr(self, "_mini_batches"):
            self._mini_batches = self.config.data.train_batch_size // actor.ppo_mini_batch_size
        dp_size = self._dp_size()
        rows, n = sum(not tag.get("is_padding", False) for tag in batch.tags), self.config.actor_rollout_ref.rollout.n
        with open_dict(self.config):
            actor.ppo_mini_batch_size = mini_batch_prompts(rows, n, dp_size, self._mini_batches)
        batch = super()._balance_batch(batch, metrics, logging_prefix, keep_minibatch)
        # verl splits the padded batch into mini-batches of ppo_mini_batch_size x n rows, one optimizer
        # step each, per PPO epoch (workers/engine_workers.py train_mini_batch).
        metrics["training/mini_batch_rows"] = actor.ppo_mini_batch_size * n
        metrics["training/optimizer_steps"] = len(batch.keys) // (actor.ppo_mini_batch_size * n) * actor.ppo_epochs
        return batch

    def _compute_advantage(self, batch, metrics):
        """verl's advantage step. With ``adv_estimator=mt_grpo`` the rows' turn spans and turn rewards
        (from the agent loop's extra fields) are handed to our registered estimator for the call
        (``advantages.py``: verl passes an estimator no batch fields), and its per-turn figures are
        logged. A step whose every group is masked has no loss token, and verl's rollout correction
        refuses such a batch (``trainer/ppo/rollout_corr_helper.py`` l. 837-838): it is skipped for
        that step (TB l. 1765 reads ``algorithm.rollout_correction`` there)."""
        turn_level = self.config.algorithm.adv_estimator == MT_GRPO
        fields = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["response_mask", *(["extra_fields"] if turn_level else [])],
        )
        if not turn_level:
            return self._verl_advantage(batch, fields["response_mask"], metrics)
        rows = [
            {} if tag.get("is_padding", False) else extra
            for tag, extra in zip(batch.tags, _as_list(fields["extra_fields"]))
        ]
        turns = BatchTurns(
            [[tuple(span) for span in row.get("turn_spans", [])] for row in rows],
            [list(row.get("turn_rewards", [])) for row in rows],
            to_dataclass(self.config.credit.turn, TurnCredit),
        )
        with turns_for_batch(turns):
            batch = self._verl_advantage(batch, fields["response_mask"], metrics)
        metrics.update(turns.metrics)
        return batch

    def _verl_advantage(self, batch, response_mask, metrics):
        self._trains_nothing = int(response_mask.values().sum()) == 0
        if not self._trains_nothing:
            batch = super()._compute_advantage(batch, metrics)
            # verl logs the advantages' mean, max and min; their size is what moves the policy.
            advantages = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["advantages"])
            trained = response_mask.values().bool()
            metrics["advantage/abs_mean"] = float(advantages["advantages"].values()[trained].abs().mean())
            return batch
        algorithm = self.config.algorithm
        correction = algorithm.get("rollout_correction")
        with open_dict(algorithm):
            algorithm.rollout_correction = None
            try:
                return super()._compute_advantage(batch, metrics)
            finally:
                algorithm.rollout_correction = correction

    def _dp_size(self) -> int:
        worker_group = self.actor_rollout_wg
        if "actor" not in worker_group._dispatch_info:
            worker_group._dispatch_info["actor"] = worker_group._query_dispatch_info("actor")
        return max(worker_group._dispatch_info["actor"]) + 1

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        """verl's metrics and ours. A step with no loss token (every group masked) has no entropy or
        other per-token mean: verl's 0/0 NaNs for them (``agg_loss`` over an empty mask, TB l. 1676-1684)
        are left out, never logged."""
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        self._check_signal_delay(timing_raw)
        if getattr(self, "_trains_nothing", False):
            for name in [k for k, v in metrics.items() if isinstance(v, numbers.Real) and math.isnan(v)]:
                del metrics[name]
        keys = [k for k, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding", False)]
        if not keys:
            return
        keys = [keys[row] for row in session_rows(keys)]
        fields = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
        infos = [e.get("reward_extra_info", {}) for e in _as_list(fields.pop("extra_fields"))]
        metrics.update(step_metrics(infos))
        metrics.update(run_curriculum(self.config.data).metrics())
        metrics.update(self._service_metrics())
        metrics["ray/actor_nodes"] = self._actor_nodes()
        if self.trainer_mode != "sync":
            metrics["rollout/in_flight_while_training"] = getattr(self, "_in_flight", 0)
        self._log_samples(global_steps)

    def _check_signal_delay(self, timing_raw: dict) -> None:
        """Under Slurm, a save on the job's signal must fit in ``launcher.signal_delay_s`` (less the
        requeue's minute): warn, once, when a measured step (verl's step timer includes its save),
        its validation and the longest save so far do not."""
        delay = self.config.launcher.get("signal_delay_s")
        self._longest_save = max(getattr(self, "_longest_save", 0.0), timing_raw.get("save_checkpoint", 0.0))
        needed = timing_raw.get("step", 0.0) + timing_raw.get("testing", 0.0) + self._longest_save + 60
        if delay is None or needed <= delay or getattr(self, "_warned_delay", False):
            return
        self._warned_delay = True
        print(
            f"warning: a step, its validation and a save took {needed - 60:.0f} s, more than "
            f"launcher.signal_delay_s={delay:g} s "
            f"less a minute: a save on Slurm's signal would be cut off; resubmit with launcher.signal_delay_s="
            f"{int(2 * needed)}",
            flush=True,
        )

    def _run_id(self) -> str:
        from terminal_rl.run_context import RunContext

        return RunContext.from_config(self.config.run).run_id

    def _actor_nodes(self) -> int:
        """How many Ray nodes the actor workers run on (multi-node runs: every node should train)."""
        if not hasattr(self, "_actor_node_count"):
            nodes = ray.get(
                [
                    worker.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id())
                    for worker in self.actor_rollout_wg.workers
                ]
            )
            self._actor_node_count = len(set(nodes))
        return self._actor_node_count

    def _service_metrics(self) -> dict[str, float]:
        from terminal_rl.integrations.verl.services import service_metrics

        return service_metrics(self._run_id())

    def _log_samples(self, global_steps: int) -> None:
        """A few trajectories of this step as a table (wandb), the brief's detailed trajectory logging."""
        try:
            import wandb
        except ImportError:
            return
        if wandb.run is None:
            return
        folder = Path(self.config.trainer.default_local_dir).parent / "logs" / "rollouts"
        rows = []
        for path in sorted(folder.glob(f"train_step{global_steps:06d}.*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines()[:SAMPLE_ROWS]:
                t = json.loads(line)
                meta = t["metadata"]
                actions = "\n".join(json.dumps(a) for turn in t["turns"] for a in turn["actions"])[:2000]
                observations = "\n".join((turn["observation"] or turn["parse_error"] or "") for turn in t["turns"])[
                    :2000
                ]
                rows.append(
                    [
                        t["task_id"],
                        t["messages"][-1]["content"][:500] if t["messages"] else "",
                        actions,
                        observations,
                        meta.get("reward"),
                        json.dumps(meta.get("components")),
                        (meta.get("judge") or {}).get("rationale", ""),
                        t["termination"],
                    ]
                )
        if rows:
            columns = [
                "task",
                "last message",
                "actions",
                "observations",
                "reward",
                "components",
                "judge rationale",
                "termination",
            ]
            wandb.log({"rollout/samples": wandb.Table(columns=columns, data=rows[:SAMPLE_ROWS])}, step=global_steps)


def _as_list(column) -> list:
    """A TransferQueue column as a list (verl itself calls .tolist() on these)."""
    return column.tolist() if hasattr(column, "tolist") else list(column)


class TerminalTrainer(TerminalSteps, PPOTrainerSync):
    """``rollouts=sync``."""


class TerminalAsyncTrainer(TerminalSteps, PPOTrainerColocateAsync):
    """``rollouts=async``."""


TRAINER_REGISTRY["sync"] = TerminalTrainer
TRAINER_REGISTRY["colocate_async"] = TerminalAsyncTrainer
