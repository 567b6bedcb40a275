"""The door of a training run: the composed config, once checked (``checks.py``), as the typed
``TrainJob`` every part below the apps takes (``training/job.py``). Nothing below reads the composed
config again, but verl (``TrainJob.verl``)."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from terminal_rl.config import project_path, to_dataclass
from terminal_rl.judge.service import JudgeConfig
from terminal_rl.preflight.checks import checkpoint_plan, judge_can_weigh
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.training.job import HardwareConfig, TrainJob, WarmStartPlan

# The sections the console header shows.
HEADER_SECTIONS = ("task_set", "model", "hardware", "reward_mix", "curriculum", "data_filter", "algorithm")


def section(cfg: DictConfig, key: str) -> DictConfig:
    """A section of the composed config on its own (resolved, no way back to the root)."""
    return OmegaConf.create(OmegaConf.to_container(cfg[key], resolve=True))


def train_job(cfg: DictConfig) -> TrainJob:
    task_set = task_set_config(cfg.task_set)
    warm = cfg.get("warm_start")
    return TrainJob(
        run=RunContext.from_config(cfg.run),
        hardware=to_dataclass(cfg.hardware, HardwareConfig),
        sandbox=SandboxConfig.from_node(cfg.sandbox),
        task_set=task_set,
        launcher=section(cfg, "launcher"),
        model=section(cfg, "model"),
        data=section(cfg, "data"),
        agent_loop_name=cfg.agent.loop_name,
        curriculum_kind=cfg.curriculum.kind,
        keep_list=cfg.data_filter.get("keep_list") or None,
        max_refills=int(cfg.data_filter.get("max_refills", 0)),
        judge=to_dataclass(cfg.judge, JudgeConfig) if judge_can_weigh(cfg) else None,
        model_made_by_run="tokenizer" in cfg.model or bool(warm),
        warm_start=None
        if not warm
        else WarmStartPlan(
            settings=OmegaConf.to_container(warm, resolve=True),
            output_root=project_path(cfg.run.output_root),
            model_path=cfg.model.path,
            task_set=task_set,
            protocol=cfg.agent.protocol,
            max_turns=int(cfg.agent.max_turns),
            enable_thinking=bool(cfg.data.apply_chat_template_kwargs.enable_thinking),
            hardware_name=cfg.hardware.name,
            param_dtype=cfg.hardware.param_dtype,
            sft_lr=float(cfg.model.sft_lr),
        ),
        checkpoints=checkpoint_plan(cfg),
        val_samples_per_row=int(cfg.actor_rollout_ref.rollout.val_kwargs.n),
        header_settings={k: OmegaConf.to_container(cfg[k], resolve=True) for k in HEADER_SECTIONS},
        loggers=list(cfg.trainer.logger),
        wandb_mode=cfg.logger.wandb_mode,
        verbose=bool(cfg.verbose),
        verl=cfg,
    )
