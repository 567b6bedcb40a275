"""The driver of a training run: set-up, Ray, the run-wide services, then verl's trainer.

Preflight has passed before this runs (``terminal_rl/train.py``: nothing starts if it fails). Order:
the warm start and the tiny model when asked for -> the run's dataset
(prepared into the run directory) -> the task images the run needs first (the rest build in the
background) -> the process environment every Ray worker inherits -> Ray -> the judge and step-ledger
actors -> the config resolved here (custom resolvers do not exist in Ray workers) -> verl.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from terminal_rl.console import (
    Console,
    MetricsFollower,
    ValidationProgress,
    header_lines,
    log_row,
    quiet_console,
    row_line,
    step_line,
    validation_line,
)
from terminal_rl.models.hub import offline_environment
from terminal_rl.plot import plot_run
from terminal_rl.run_context import RunContext
from terminal_rl.training.job import TrainJob

PLUGIN = "terminal_rl.integrations.verl.plugin"


def run_environment(run: RunContext, wandb_mode: str, hardware_env: dict) -> dict[str, str]:
    """Environment every process of the run gets (Ray workers inherit it from the driver):
    ``hardware_env`` is the hardware preset's ``env``."""
    env = {
        "VERL_USE_EXTERNAL_MODULES": PLUGIN,
        "TERMINAL_RL_RUN_ID": run.run_id,
        "WANDB_MODE": wandb_mode,
        "WANDB_DIR": str(run.log_dir),
        # One metrics file per launch: verl's file logger truncates its file, and a resume must not
        # erase the steps before it.
        "VERL_FILE_LOGGER_PATH": str(run.log_dir / f"metrics.{time.strftime('%Y%m%d-%H%M%S')}.jsonl"),
        # Model weights come from a local folder or the shared Hub cache, never the Hub (models/hub.py).
        **(offline_environment(run.hub_cache) if run.hub_cache else {}),
        # Docker endpoint and base images are per node; rollout workers reach the daemon themselves.
        **{k: str(v) for k, v in hardware_env.items()},
    }
    return env


def job_environment(job: TrainJob) -> dict[str, str]:
    return run_environment(job.run, job.wandb_mode, job.hardware.env)


def apply_environment(env: dict[str, str]) -> None:
    """Set the run's environment in this process and load our verl plugin here too (verl loads it
    in every other process from VERL_USE_EXTERNAL_MODULES). Must run before verl picks a platform."""
    import importlib

    os.environ.update(env)
    # verl's notices of optional engines we do not use (megatron, veomni, ...): every Ray worker
    # prints them again into the run's log; the driver's copies would only clutter the console.
    warnings.filterwarnings("ignore", message=r".* engine is not available", category=UserWarning)
    # Ray refuses fake GPUs with an empty device list, and CPU runs must not see a real one.
    if os.environ.get("VERL_PLATFORM") == "cpu":
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    importlib.import_module(PLUGIN)


def prepare(job: TrainJob, console) -> tuple[list[str], int]:
    """The warm start and the tiny model (if configured and missing), the run's dataset, the console
    header and the run's first task images, before any worker starts. Returns the ids of the tasks
    whose images were built first, and how many episodes a validation runs."""
    from terminal_rl.models.tiny import ensure_tiny_model
    from terminal_rl.tasks.prepare import prepare_task_set
    from terminal_rl.training.warm_start import ensure_warm_start

    if job.warm_start:
        ensure_warm_start(job.warm_start, console)
    ensure_tiny_model(job.model)
    from terminal_rl.curriculum.plot import plot_schedule
    from terminal_rl.integrations.verl.curriculum import run_schedule

    run = job.run
    prepared = prepare_task_set(job.task_set, run, job.agent_loop_name)
    if len(prepared.train) < job.data.train_batch_size:
        raise ValueError(
            f"the train split has {len(prepared.train)} tasks but a step takes data.train_batch_size="
            f"{job.data.train_batch_size} prompts: add tasks, lower task_set.val_fraction or "
            "model_hardware.prompts_per_step"
        )
    run.log_dir.mkdir(parents=True, exist_ok=True)
    schedule, steps = run_schedule(job.data)
    for line in header_lines(run.run_id, run.shared_dir, prepared.counts(), job.header_settings, steps):
        console.print(line)
    first, val_rows = prepare_images(job, prepared, schedule, console)
    # The schedule this run uses, beside its logs.
    plot_schedule(schedule, job.curriculum_kind, run.log_dir / "curriculum.png", steps)
    return first, val_rows * job.val_samples_per_row


def prepare_images(job: TrainJob, prepared, schedule, console: Console) -> tuple[list[str], int]:
    """Build the images of the validation rows and the first draws now, the rest in the background
    (``terminal_rl/training/run_images.py``); tasks whose image fails leave the run, with the reason
    in its image report. Returns the ids built now that the run keeps, and its validation rows."""
    from terminal_rl.curriculum.schedule import CurriculumState
    from terminal_rl.filtering.keep_list import read_keep_list
    from terminal_rl.integrations.verl.curriculum import validation_rows
    from terminal_rl.sandbox.images.build_report import failure_line
    from terminal_rl.training.run_images import RunImages, first_needed

    sandbox, run = job.sandbox, job.run
    images = RunImages(sandbox, run, prepared.train + prepared.val, float(job.hardware.min_free_disk_gb))
    if images.retried:
        console.print(
            f"task images: building {len(images.retried)} again that an earlier attempt could not build for "
            "a reason that may pass (network, timeout, engine)"
        )
    mix = schedule.difficulty_mix(CurriculumState())
    keep = read_keep_list(job.keep_list) if job.keep_list else None
    difficulties = {t.id: t.difficulty.value for t in prepared.train}
    val_ids = [t.id for t in prepared.val]
    # The first step's prompts and as many refills again (online-variance filtering draws more).
    draws = 2 * int(job.data.train_batch_size)

    def validation(unavailable: frozenset[str]) -> list[str]:
        return [val_ids[i] for i in validation_rows(val_ids, unavailable, int(job.data.get("val_max_samples", -1)))]

    def predict(unavailable: frozenset[str]) -> list[str]:
        val = validation(unavailable)
        return first_needed(difficulties, val, mix, int(job.task_set.split_seed), draws, keep, unavailable)

    failed = images.build_first(predict, console.rich, sandbox.build.jobs)
    for outcome in failed:
        console.print(f"{failure_line(outcome)}; it leaves this run; see {run.image_report}")
    images.build_rest_in_background()
    unavailable = images.unavailable()
    return predict(unavailable), len(validation(unavailable))


def ray_runtime_env(verl_config: DictConfig, env: dict[str, str]) -> dict:
    """The run's Ray runtime environment, as ``main_ppo.run_ppo`` would pass it to ``ray.init`` had
    verl started Ray (``trainer/main_ppo.py`` l. 57-73): verl's PPO variables (VLLM_DISABLE_COMPILE_CACHE,
    VLLM_ALLOW_RUNTIME_LORA_UPDATING, TOKENIZERS_PARALLELISM, ..., less those the launching shell set,
    ``constants_ppo.py`` l. 85-127), the TransferQueue switch, then ``ray_kwargs.ray_init.runtime_env``
    merged over them (working_dir, pip, py_modules, env_vars), then the run's own variables on top.
    We start Ray ourselves (the judge and ledger actors come first), so verl skips all of it."""
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    defaults = get_ppo_ray_runtime_env(verl_config)
    if verl_config.transfer_queue.get("enable", False):
        defaults.setdefault("env_vars", {})["TRANSFER_QUEUE_ENABLE"] = "1"
    merged = OmegaConf.to_container(
        OmegaConf.merge(defaults, verl_config.ray_kwargs.ray_init.get("runtime_env") or {}), resolve=True
    )
    merged["env_vars"] = {**{k: str(v) for k, v in (merged.get("env_vars") or {}).items()}, **env}
    return merged


def start_ray(job: TrainJob, env: dict[str, str]) -> None:
    import ray

    if ray.is_initialized():
        return
    runtime_env = ray_runtime_env(job.verl, env)
    address = os.environ.get("RAY_ADDRESS")
    if address:  # a cluster started outside (Slurm bootstrap): its resources are the allocation's
        ray.init(address=address, _node_ip_address=os.environ.get("TERMINAL_RL_NODE_IP"), runtime_env=runtime_env)
        return
    import psutil

    for attempt in (1, 2):
        before = {child.pid for child in psutil.Process().children(recursive=True)}
        try:
            ray.init(
                num_cpus=job.hardware.ray_num_cpus,
                num_gpus=job.hardware.ray_num_gpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                runtime_env=runtime_env,
            )
            return
        except Exception as error:
            # Ray waits a fixed 30 s for its raylet to register (ray/_private/node.py, the loop after
            # start_ray_processes); a loaded machine (a killed run's Ray still exiting) can miss it.
            if attempt == 2 or "timed out during startup" not in str(error):
                raise
            print(f"ray: {error}; starting it again", flush=True)
            # ray.init failed before it kept its node: its GCS and raylet are ours to stop.
            for child in psutil.Process().children(recursive=True):
                if child.pid not in before:
                    child.kill()


def start_services(job: TrainJob) -> None:
    """The run-wide step ledger, the record of generation pauses and, when any stage can give the judge
    a weight, the judge (named Ray actors)."""
    from terminal_rl.integrations.verl.services import start_generation_pauses, start_ledger
    from terminal_rl.judge.ray_actor import start_judge_actor

    run = job.run
    start_ledger(run.run_id, job.max_refills)
    start_generation_pauses(run.run_id)
    if job.judge is not None:
        start_judge_actor(job.judge, run.judge_control_dir, run.run_id)


def train(
    job: TrainJob, env: dict[str, str] | None = None, nodes_ready: Callable[[list[str]], None] | None = None
) -> None:
    """Everything after preflight, in this process: the console shows the header, image preparation
    and one line per step; everything verl, Ray and the libraries print goes to ``logs/train.log``.
    ``env``: the run's environment when the caller already started Ray with it (the Slurm head).
    ``nodes_ready(first_task_ids)``: called once this node is prepared, before any worker starts (the
    Slurm head waits there for the other nodes to build the same first images)."""
    env = env or job_environment(job)
    apply_environment(env)
    # verl's checks fill the config in place: a copy, so the job (a Slurm requeue ships it) stays as made.
    run, verl_config = job.run, copy.deepcopy(job.verl)
    first, val_episodes = prepare(job, Console(sys.stdout))
    if nodes_ready is not None:
        nodes_ready(first)
    OmegaConf.resolve(verl_config)
    log_file = run.log_dir / "train.log"
    with quiet_console(log_file, job.verbose) as console:
        if not job.verbose:
            console.print(row_line(*log_row(log_file)))
        start_ray(job, env)
        start_services(job)

        from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config
        from verl.utils.device import auto_set_device

        auto_set_device(verl_config)
        validate_config(
            verl_config,
            use_reference_policy=need_reference_policy(verl_config),
            use_critic=need_critic(verl_config),
        )
        validation_progress = ValidationProgress(run.log_dir / "rollouts", val_episodes, console.print)
        with (
            MetricsFollower(Path(env["VERL_FILE_LOGGER_PATH"]), progress(console, job, validation_progress)),
            validation_progress,
        ):
            run_ppo(verl_config, task_runner_class=TaskRunnerV1)
        sys.stdout.flush()
        plot_run(run.shared_dir, warn=console.print)
        import ray

        # Inside the redirect: Ray forwards the workers' last lines while it shuts down.
        ray.shutdown()
        remove_leftover_sandboxes(job)
        for line in footer_lines(job):
            console.print(line)


def remove_leftover_sandboxes(job: TrainJob) -> None:
    """The sandboxes of episodes still running when training ended (async mode keeps episodes in
    flight; their workers are gone with Ray) on this node; a Slurm job's other nodes sweep their own
    on exit (``launch/slurm.py``)."""
    from terminal_rl.sandbox.lifecycle.janitor import sweep_until_settled
    from terminal_rl.sandbox.runtime.docker_client import docker_client

    removed = sweep_until_settled(docker_client(job.sandbox.docker_host), run_id=job.run.run_id)
    if removed:
        print(f"removed {removed} sandboxes of episodes still running when training ended", flush=True)


def progress(console, job: TrainJob, validation_progress: ValidationProgress):
    """The metrics follower's callback: a progress line per step, validation results when they ran
    (after the validation's last progress line: both files are polled, the rollouts' first)."""
    from terminal_rl.integrations.verl.curriculum import run_schedule

    total = run_schedule(job.data)[1]
    step_seconds: list[float] = []

    def on_step(step: int, data: dict) -> None:
        # A record without a step time is validation alone (before training, or at a resume).
        if "timing_s/step" in data:
            step_seconds.append(float(data["timing_s/step"]))
            console.print(step_line(step, total, data, sum(step_seconds) / len(step_seconds)))
        validation = validation_line(step, data)
        if validation:
            validation_progress.poll()
            console.print(validation)

    return on_step


def footer_lines(job: TrainJob) -> list[str]:
    run = job.run
    lines = [
        f"done: checkpoints {job.verl.trainer.default_local_dir}",
        f"      logs        {run.log_dir}",
        f"      plots       {run.shared_dir / 'plots'}  (python -m terminal_rl.plot run.id={run.run_id})",
    ]
    if "wandb" in job.loggers:
        lines.append(f"      wandb       {run.log_dir / 'wandb'}  (wandb sync to upload an offline run)")
    return lines
