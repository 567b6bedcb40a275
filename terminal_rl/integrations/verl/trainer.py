"""verl's sync trainer with our per-step metrics: reward components and weights, masked groups,
terminations, behaviour, curriculum and judge figures, plus a small table of sample trajectories.

Installed in place of verl's "sync" trainer (``TRAINER_REGISTRY["sync"]``): a new mode name would
switch verl onto its async code paths. Everything else is verl's own.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import ray
import transfer_queue as tq
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from terminal_rl.integrations.verl.curriculum import run_curriculum

# reward_extra_info key prefix -> metric name prefix
_PREFIXES = {"component_": "reward/{}/mean", "weight_": "reward/weight/{}", "end_": "rollout/ended/{}",
             "behaviour_": "behaviour/{}"}
SAMPLE_ROWS = 4


def step_metrics(infos: list[dict[str, float]]) -> dict[str, float]:
    """Means of the per-sample numbers under their metric names (pure; tested without verl)."""
    values: dict[str, list[float]] = defaultdict(list)
    for info in infos:
        for key, value in info.items():
            values[key].append(float(value))
    metrics: dict[str, float] = {}
    for key, series in values.items():
        mean = float(np.mean(series))
        for prefix, template in _PREFIXES.items():
            if key.startswith(prefix):
                metrics[template.format(key[len(prefix):])] = mean
                break
        else:
            metrics[{"masked": "rollout/masked_fraction", "judge_fallback": "reward/judge_fallback_fraction",
                     "stage": "curriculum/stage", "acc": "reward/tests_score",
                     "pass": "reward/pass_rate"}.get(key, f"rollout/{key}")] = mean
    return metrics


class TerminalTrainer(PPOTrainerSync):
    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        keys = [k for k, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding", False)]
        if not keys:
            return
        fields = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["extra_fields", "extra_info"])
        extra_fields, extra_info = (_as_list(fields.pop(name)) for name in ("extra_fields", "extra_info"))
        infos = [e.get("reward_extra_info", {}) for e in extra_fields]
        metrics.update(step_metrics(infos))
        curriculum = run_curriculum(self.config.data)
        curriculum.record_step([(row["task_id"], int(row.get("curriculum_stage", 0)), info.get("acc", 0.0))
                                for row, info in zip(extra_info, infos) if not info.get("masked")])
        metrics.update(curriculum.metrics())
        # verl saves a step's checkpoint before computing its metrics: the curriculum state that
        # includes this step is written into that checkpoint now.
        folder = Path(self.config.trainer.default_local_dir) / f"global_step_{global_steps}"
        if folder.is_dir():
            curriculum.save(folder)
        metrics.update(self._service_metrics())
        metrics["ray/actor_nodes"] = self._actor_nodes()
        self._log_samples(global_steps)

    def _load_checkpoint(self):
        super()._load_checkpoint()
        if self.global_steps:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
            run_curriculum(self.config.data).restore(folder)

    def _actor_nodes(self) -> int:
        """How many Ray nodes the actor workers run on (multi-node runs: every node should train)."""
        if not hasattr(self, "_actor_node_count"):
            nodes = ray.get([worker.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id())
                             for worker in self.actor_rollout_wg.workers])
            self._actor_node_count = len(set(nodes))
        return self._actor_node_count

    def _service_metrics(self) -> dict[str, float]:
        from terminal_rl.integrations.verl.services import service_metrics

        return service_metrics(self.config)

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
                observations = "\n".join((turn["observation"] or turn["parse_error"] or "") for turn in t["turns"])[:2000]
                rows.append([t["task_id"], t["messages"][-1]["content"][:500] if t["messages"] else "", actions,
                             observations, meta.get("reward"), json.dumps(meta.get("components")),
                             (meta.get("judge") or {}).get("rationale", ""), t["termination"]])
        if rows:
            columns = ["task", "last message", "actions", "observations", "reward", "components", "judge rationale",
                       "termination"]
            wandb.log({"rollout/samples": wandb.Table(columns=columns, data=rows[:SAMPLE_ROWS])}, step=global_steps)


def _as_list(column) -> list:
    """A TransferQueue column as a list (verl itself calls .tolist() on these)."""
    return column.tolist() if hasattr(column, "tolist") else list(column)


TRAINER_REGISTRY["sync"] = TerminalTrainer
