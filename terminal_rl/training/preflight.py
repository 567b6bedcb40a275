"""Preflight: every check that can fail a run, done in seconds before any job starts or is submitted.

Each check returns the problems it finds, one clear message each (the setting, its value, the fix);
``run_preflight`` collects them all instead of stopping at the first. ``preflight_notes`` tells what
does not refuse a run: warnings, and what a step and the checkpoints will cost. verl's own validation runs
through ``terminal_rl.integrations.verl`` (the only package that imports verl).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.tokens import History
from terminal_rl.config import CONF_DIR, free_disk_bytes, nearest_existing, project_path, to_dataclass
from terminal_rl.models.lora import LoRA, projections, trainable_parameters, unknown_modules
from terminal_rl.rewards.fixture_guard import FixtureGuard
from terminal_rl.training.costs import EpisodeCost, EpisodeShape, checkpoint_gb, episode_cost
from terminal_rl.training.memory import estimate

Check = Callable[[DictConfig], list[str]]

# LoRA needs about 10x full fine-tuning's rate (1e-6 here; Schulman et al., "LoRA Without Regret",
# 2025): below this floor a LoRA run barely moves, so preflight warns.
LORA_LR_FLOOR = 5e-6


def supported_pairs() -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / "model_hardware").glob("*.yaml"))


def check_support(cfg: DictConfig) -> list[str]:
    pair = f"{cfg.model.name}_{_hardware_name(cfg)}"
    if "tensor_parallel" in cfg.model_hardware:
        return []
    return [
        f"model={cfg.model.name} is not supported on hardware={_hardware_name(cfg)} (no "
        f"conf/model_hardware/{pair}.yaml); supported model_hardware pairs: {', '.join(supported_pairs())}"
    ]


def check_batches(cfg: DictConfig) -> list[str]:
    """Batch sizes against the data-parallel size: GPUs / Ulysses, the FSDP engine's
    get_data_parallel_size (verl ``workers/engine/fsdp/transformer_impl.py`` l. 651-652)."""
    problems = []
    gpus = cfg.hardware.nodes * cfg.hardware.gpus_per_node
    ulysses = cfg.actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size
    dp = max(gpus // ulysses, 1)
    where = f"the data-parallel size ({gpus} GPUs / Ulysses {ulysses} = {dp})"
    prompts, n = cfg.data.train_batch_size, cfg.actor_rollout_ref.rollout.n
    if (prompts * n) % dp:
        problems.append(
            f"data.train_batch_size ({prompts}) x rollout.n ({n}) = {prompts * n} trajectories per step "
            f"is not divisible by {where}; change prompts_per_step or rollouts_per_prompt in the "
            "model_hardware file"
        )
    mini = cfg.actor_rollout_ref.actor.ppo_mini_batch_size
    if mini > prompts or prompts % mini:
        problems.append(f"actor.ppo_mini_batch_size ({mini}) must divide data.train_batch_size ({prompts})")
    # verl gives each data-parallel rank mini-batch / dp rows (workers/engine_workers.py l. 266-270, which
    # asserts the division) and splits them into micro-batches (workers/engine/utils.py l. 124-127);
    # with one row per trajectory (append) the share is fixed.
    micro = cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu
    if cfg.agent.history == "append" and ((mini * n) % dp or (mini * n // dp) % micro):
        problems.append(
            f"a mini-batch of {mini} prompts x {n} rollouts gives {mini * n / dp:g} trajectories per "
            f"data-parallel rank ({where}), not a multiple of actor.ppo_micro_batch_size_per_gpu "
            f"({micro}); change micro_batch_per_gpu, rollouts_per_prompt or prompts_per_step in the "
            "model_hardware file"
        )
    return problems


def check_parallelism(cfg: DictConfig) -> list[str]:
    problems = []
    arch, tp = cfg.model.architecture, cfg.actor_rollout_ref.rollout.tensor_model_parallel_size
    sp = cfg.actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size
    if cfg.hardware.gpus_per_node % tp:
        problems.append(f"tensor-parallel size {tp} does not divide gpus_per_node ({cfg.hardware.gpus_per_node})")
    for name, size in (("tensor-parallel", tp), ("Ulysses sequence-parallel", sp)):
        # Query heads must split evenly; KV heads split evenly or are replicated across ranks.
        if arch.attention_heads % size or (arch.kv_heads % size and size % arch.kv_heads):
            problems.append(
                f"{name} size {size} does not divide {cfg.model.name}'s {arch.attention_heads} attention "
                f"heads / {arch.kv_heads} KV heads"
            )
    return problems


def check_sequence(cfg: DictConfig) -> list[str]:
    problems = []
    context, limit = cfg.agent.max_context_tokens, cfg.model.architecture.context_length
    if context > limit:
        problems.append(f"agent.max_context_tokens ({context}) exceeds {cfg.model.name}'s context length ({limit})")
    if cfg.data.max_prompt_length >= context:
        problems.append(
            f"data.max_prompt_length ({cfg.data.max_prompt_length}) leaves no room for a response "
            f"within {context} tokens"
        )
    if cfg.agent.max_tokens_per_turn > context - cfg.data.max_prompt_length:
        problems.append(
            f"agent.max_tokens_per_turn ({cfg.agent.max_tokens_per_turn}) exceeds the response budget "
            f"({context - cfg.data.max_prompt_length})"
        )
    return problems


def check_memory(cfg: DictConfig) -> list[str]:
    hw, mh = cfg.hardware, cfg.model_hardware
    if hw.device != "cuda":
        return []
    result = estimate(
        dict(cfg.model.architecture),
        hw.nodes * hw.gpus_per_node,
        hw.gpu_memory_gb,
        mh.tensor_parallel,
        mh.ulysses_parallel,
        mh.micro_batch_per_gpu,
        cfg.agent.max_context_tokens,
        mh.gpu_memory_utilization,
        mh.param_offload,
        mh.optimizer_offload,
        hw.attention == "flash_attention_2",
        _lora_trainable(cfg),
        int(hw.fsdp_size),
    )
    where = f"for {cfg.model.name} on {_hardware_name(cfg)}"
    problems = []
    if result.train_gb > hw.gpu_memory_gb:
        problems.append(
            f"estimated training memory {result.train_gb:.1f} GB per GPU exceeds {hw.gpu_memory_gb} GB "
            f"{where}; turn on param/optimizer offload, raise ulysses_parallel or lower micro_batch_per_gpu"
        )
    if not result.rollout_fits:
        problems.append(
            f"rollout needs {result.rollout_weights_gb:.1f} GB of weights + "
            f"{result.rollout_kv_per_sequence_gb:.1f} GB KV cache per sequence per GPU, more than "
            f"gpu_memory_utilization x memory = {result.rollout_budget_gb:.1f} GB; raise tensor_parallel "
            "or gpu_memory_utilization"
        )
    if result.rollout_gb > hw.gpu_memory_gb:
        problems.append(
            f"while vLLM generates, the actor keeps {result.rollout_actor_gb:.1f} GB per GPU (fp32 weights "
            f"and Adam moments) beside vLLM's {result.rollout_budget_gb:.1f} GB: more than {hw.gpu_memory_gb} GB "
            f"{where}; lower gpu_memory_utilization or turn on param/optimizer offload"
        )
    return problems


def _lora(cfg: DictConfig) -> LoRA:
    """``model.lora`` typed; ValueError names an unknown or missing key."""
    return to_dataclass(cfg.model.lora, LoRA)


def _lora_trainable(cfg: DictConfig) -> int | None:
    """Parameters LoRA trains (None: full fine-tuning, or a ``model.lora`` that check_lora rejects)."""
    try:
        lora = _lora(cfg)
    except ValueError:
        return None
    return trainable_parameters(dict(cfg.model.architecture), lora.rank, lora.target_modules) if lora.rank else None


def check_lora(cfg: DictConfig) -> list[str]:
    """``model.lora`` reaches verl's keys and trains something: a target name that matches no
    projection, or verl's LoRA keys set apart from ours, would train without (some of) LoRA."""
    try:
        lora = _lora(cfg)
    except ValueError as error:
        return [f"model.lora: {error}"]
    targets = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
    if isinstance(targets, str) and targets != "all-linear":
        return [f"model.lora.target_modules must be all-linear or a list of projection names, not {targets!r}"]
    verl = cfg.actor_rollout_ref.model
    verl_targets = verl.target_modules if isinstance(verl.target_modules, str) else list(verl.target_modules)
    problems = []
    if int(verl.lora_rank) != lora.rank or int(verl.lora_alpha) != lora.alpha:
        problems.append(
            f"actor_rollout_ref.model.lora_rank={verl.lora_rank} (alpha {verl.lora_alpha}) differs from "
            f"model.lora.rank={lora.rank} (alpha {lora.alpha}): set LoRA through model.lora, verl's keys follow it"
        )
    if verl_targets != targets:
        problems.append(
            f"actor_rollout_ref.model.target_modules={verl_targets} differs from model.lora.target_modules="
            f"{targets}: set LoRA through model.lora, verl's keys follow it"
        )
    if lora.rank:
        unknown = unknown_modules(dict(cfg.model.architecture), targets)
        if unknown:
            problems.append(
                f"model.lora.target_modules {unknown} match no projection of {cfg.model.name} "
                f"({', '.join(projections(dict(cfg.model.architecture)))}) and would train nothing"
            )
        elif not trainable_parameters(dict(cfg.model.architecture), lora.rank, targets):
            problems.append(f"model.lora.rank={lora.rank} with target_modules {targets} trains no parameter")
    return problems


def lora_lr_warning(cfg: DictConfig) -> list[str]:
    lr = float(cfg.actor_rollout_ref.actor.optim.lr)
    if not cfg.model.lora.rank or lr >= LORA_LR_FLOOR:
        return []
    return [
        f"warning: a LoRA run (rank {cfg.model.lora.rank}) at actor lr {lr:g}, below {LORA_LR_FLOOR:g}: LoRA needs "
        "about 10x the full fine-tuning rate; set model.lora.lr (model/lora=r64 sets 1e-5)"
    ]


def step_costs(cfg: DictConfig) -> dict[History, EpisodeCost]:
    """An episode's turns, rows and trained tokens in each history mode, for the episode shape
    ``cost_estimate`` assumes, under this run's budget (a step trains prompts x rollouts of them)."""
    shape = to_dataclass(cfg.cost_estimate, EpisodeShape)
    agent = AgentConfig.from_node(cfg.agent)
    return {
        mode: episode_cost(
            mode, shape, agent.limits_for(mode), agent.limits.max_turns, agent.limits.max_tokens_per_turn
        )
        for mode in History
    }


def step_cost_note(cfg: DictConfig) -> list[str]:
    """Trained rows and tokens per step in both history modes, for the configured geometry (per_turn
    re-trains the whole history every turn)."""
    shape, costs = to_dataclass(cfg.cost_estimate, EpisodeShape), step_costs(cfg)
    episodes = cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n
    if not costs[History.APPEND].turns:
        return [
            f"cost_estimate's first prompt ({shape.first_prompt_tokens} tokens) does not fit this run's budget: "
            "set cost_estimate to this run's episodes for a per-step estimate"
        ]
    parts = [
        f"{mode.value} {c.turns} turns, {c.rows} row(s) and {c.tokens / 1e3:.1f}k tokens an episode, "
        f"{episodes * c.tokens / 1e6:.1f}M a step"
        for mode, c in costs.items()
    ]
    ratio = costs[History.PER_TURN].tokens / costs[History.APPEND].tokens
    return [
        f"trained tokens ({cfg.data.train_batch_size} prompts x {cfg.actor_rollout_ref.rollout.n} rollouts, episodes "
        "of "
        f"a {shape.first_prompt_tokens}-token prompt and {shape.turn_tokens}-token turns answered by "
        f"{shape.observation_tokens}): {'; '.join(parts)} (per_turn {ratio:.1f}x); this run: {cfg.agent.history}"
    ]


def sandbox_note(cfg: DictConfig) -> list[str]:
    """How many of a step's episodes run at once: sandbox.max_sandboxes is a node's cap."""
    episodes = cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n
    at_once = min(episodes, cfg.sandbox.max_sandboxes * cfg.hardware.nodes)
    return [
        f"sandboxes: {cfg.sandbox.max_sandboxes} a node x {cfg.hardware.nodes} node(s): {at_once} of a step's "
        f"{episodes} episodes at once (sandbox.max_sandboxes, from the model_hardware file's sandbox_concurrency)"
    ]


def notes(cfg: DictConfig) -> list[str]:
    """What preflight tells without refusing a run."""
    return [*lora_lr_warning(cfg), *step_cost_note(cfg), *sandbox_note(cfg), *_checkpoint_plan(cfg)[2:]]


def _checkpoint_plan(cfg: DictConfig) -> tuple[int, float, str]:
    """(checkpoints kept at most, GB each, a line saying so), from the model preset's size."""
    from terminal_rl.curriculum.schedule import run_steps
    from terminal_rl.tasks.loaders import TaskSourceError

    trainer = cfg.trainer
    trained = _lora_trainable(cfg) or cfg.model.architecture.parameters
    size = checkpoint_gb(float(cfg.model.architecture.parameters), float(trained))
    kept = trainer.max_actor_ckpt_to_keep
    if kept is None:  # verl keeps every one: the run's saves
        try:
            steps = run_steps(
                len(_split(cfg)[0]), cfg.data.train_batch_size, trainer.total_epochs, trainer.total_training_steps
            )
        except (TaskSourceError, ValueError):
            steps = trainer.total_training_steps or 0
        kept = steps // trainer.save_freq if trainer.save_freq > 0 else 0
    line = (
        f"checkpoints: {kept} kept (trainer.max_actor_ckpt_to_keep={trainer.max_actor_ckpt_to_keep}) x "
        f"{size:.1f} GB = {kept * size:.1f} GB in {trainer.default_local_dir}"
    )
    return int(kept), size, line


def check_checkpoint_disk(cfg: DictConfig) -> list[str]:
    """The checkpoints the run keeps fit in the free space of their directory: at the peak one more
    than kept (a save is written before the oldest is removed, verl ``checkpoint_manager.py``
    l. 166-194), less those already there (a resume's: their space is taken already)."""

    from terminal_rl.training.checkpoints import saved_steps

    kept, size, line = _checkpoint_plan(cfg)
    folder = project_path(cfg.trainer.default_local_dir)
    existing = nearest_existing(folder)
    present = len(saved_steps(folder)) if folder.is_dir() else 0
    needed_gb = max(0, kept + 1 - present) * size if kept else 0.0
    free_gb = free_disk_bytes(folder) / 1e9
    if needed_gb <= free_gb:
        return []
    return [
        f"{line}; at the peak {needed_gb:.1f} GB more (one more while a save replaces the oldest), but {existing} "
        f"has {free_gb:.1f} GB free: lower trainer.max_actor_ckpt_to_keep, raise trainer.save_freq, or point "
        "trainer.default_local_dir at a larger filesystem"
    ]


def check_dataset(cfg: DictConfig) -> list[str]:
    from terminal_rl.tasks.loaders import TaskSourceError

    try:
        train, val = _split(cfg)
    except (TaskSourceError, ValueError) as error:
        return [f"task_set: {error}"]
    if not train and not val:
        return [
            f"task_set {cfg.task_set.path}: no valid task (run `python -m terminal_rl.tasks prepare` for the report)"
        ]
    # verl cannot build a loader over no rows: it would fail minutes later inside a Ray worker.
    empty = [split for split, tasks in (("training", train), ("validation", val)) if not tasks]
    if empty:
        source = (
            "task_set.validation"
            if cfg.task_set.get("validation")
            else f"task_set.val_fraction={cfg.task_set.val_fraction} of {len(train) + len(val)}, rounded per difficulty"
        )
        return [
            f"task_set {cfg.task_set.path}: the {empty[0]} split has no valid task ({source}): use more tasks, "
            "another task_set.val_fraction, or a task_set.validation source"
        ]
    return []


def check_curriculum(cfg: DictConfig) -> list[str]:
    """A curriculum that anneals the judge must reach its tests-only stage within the run, with every
    stage at its full length (score gates can only make it sooner, never guarantee it)."""
    from omegaconf import OmegaConf

    from terminal_rl.curriculum.schedule import judge_free_from, run_steps, schedule_from_config
    from terminal_rl.tasks.loaders import TaskSourceError

    try:
        train, _ = _split(cfg)
    except (TaskSourceError, ValueError):
        return []  # check_dataset reports it
    steps = run_steps(len(train), cfg.data.train_batch_size, cfg.trainer.total_epochs, cfg.trainer.total_training_steps)
    try:
        schedule = schedule_from_config(OmegaConf.to_container(cfg.curriculum, resolve=True), steps)
    except ValueError as error:
        return [f"curriculum: {error}"]
    if not schedule.anneals_judge:
        return []
    start = judge_free_from(schedule)
    if start is None:
        return [
            "curriculum: no stage sets every judge weight to 0 for good, so the judge never leaves the reward; "
            "end the schedule with a tests-only stage"
        ]
    if start >= steps:
        return [
            f"curriculum: the judge weight reaches 0 only at step {start + 1}, after the run's {steps} training "
            "steps (trainer.total_training_steps / total_epochs); shorten the stages' fractions or train longer"
        ]
    return []


def check_history(cfg: DictConfig) -> list[str]:
    """``agent.history=per_turn`` trains several rows per trajectory: only GRPO copies a session's
    advantage from its last row to the others (verl ``trainer/ppo/v1/utils.py`` l. 167-217)."""
    per_row = {"grpo"}
    if cfg.agent.history == "per_turn" and cfg.algorithm.adv_estimator not in per_row:
        return [
            f"agent.history=per_turn needs an advantage estimator that gives every turn its trajectory's "
            f"advantage ({sorted(per_row)}), not algorithm.adv_estimator={cfg.algorithm.adv_estimator}; "
            "use agent.history=append"
        ]
    return []


def check_fixture_guard(cfg: DictConfig) -> list[str]:
    try:
        FixtureGuard.of(cfg.fixture_guard)
    except ValueError as error:
        return [str(error)]
    return []


def check_attention(cfg: DictConfig) -> list[str]:
    """Ulysses sequence parallelism needs flash-attention: verl's all-to-all lives in its patched
    flash-attention forward (``models/transformers/monkey_patch.py`` l. 544-552)."""
    sp = cfg.actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size
    if sp > 1 and cfg.hardware.attention != "flash_attention_2":
        return [
            f"Ulysses sequence parallelism ({sp}) needs hardware.attention=flash_attention_2 (got "
            f"{cfg.hardware.attention}); install flash-attn (README, GPU set) or set ulysses_parallel=1"
        ]
    return []


def check_flash_attention(cfg: DictConfig) -> list[str]:
    """flash-attn is installed on this node when the run is configured to use it."""
    import importlib.util

    if cfg.hardware.attention == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        return [
            "hardware.attention=flash_attention_2 but flash-attn is not installed on this node: "
            "`pip install --no-build-isolation flash-attn -c constraints/gpu.txt` (README, GPU set), or use "
            "hardware.attention=sdpa with ulysses_parallel=1"
        ]
    return []


def _split(cfg: DictConfig):
    """The task set's valid tasks, split as the run will split them (loaded once per config)."""
    from terminal_rl.tasks.prepare import train_and_val
    from terminal_rl.tasks.task_set import task_set_config

    key = repr(sorted(OmegaConf.to_container(cfg.task_set, resolve=True).items()))
    if key not in _SPLITS:
        _SPLITS[key] = train_and_val(task_set_config(cfg.task_set))[:2]
    return _SPLITS[key]


_SPLITS: dict[str, tuple] = {}


def check_docker(cfg: DictConfig) -> list[str]:
    """The engine answers, and every base image of the task set a recipe provides is here, with the
    common image the toolchain builds from. (A base image no recipe covers is not a problem here: its
    tasks' images fail to build and leave the run; ``tasks prepare`` reports the fix.)"""
    from docker.errors import DockerException, ImageNotFound

    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.images.base_images import common_tag, plan
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.tasks.dockerfile import task_set_images
    from terminal_rl.tasks.loaders import TaskSourceError

    sandbox = SandboxConfig.from_node(cfg.sandbox)
    try:
        train, val = _split(cfg)
    except (TaskSourceError, ValueError):
        return []  # check_dataset reports it
    try:
        client = docker_client(sandbox.docker_host)
        needs = plan(client, sandbox.base_images, task_set_images(train + val))
        missing = sorted(needs.provide)
        try:
            client.images.get(common_tag(sandbox.base_images))
        except ImageNotFound:
            missing.insert(0, common_tag(sandbox.base_images))
    except DockerException as error:
        return [
            f"no Docker endpoint answers (sandbox.docker_host={sandbox.docker_host!r} / $DOCKER_HOST): {error}; "
            "start dockerd or `podman system service`"
        ]
    if missing:
        return [
            f"base images missing: {missing}; run `python -m terminal_rl.sandbox images bootstrap` with this "
            "run's task_set (and sandbox) overrides"
        ]
    return []


def check_judge_credentials(cfg: DictConfig) -> list[str]:
    if not judge_can_weigh(cfg) or not cfg.judge.api_key_env or os.environ.get(cfg.judge.api_key_env):
        return []
    return [
        f"the judge can weigh in the reward, but ${cfg.judge.api_key_env} (judge.api_key_env) is not set in "
        "this environment; export it, point judge.api_key_env at the right variable, or use reward_mix=tests_only"
    ]


def judge_can_weigh(cfg: DictConfig) -> bool:
    """Whether any stage of the run can give the judge a weight above 0."""
    weights = [cfg.reward_mix.weights.get("judge", 0.0)]
    if cfg.curriculum.kind == "staged":  # only staged curricula set per-stage judge weights
        weights += [w for stage in cfg.curriculum.stages for w in stage.get("judge_weights", {}).values()]
    return max(weights) > 0


def check_judge_reachable(cfg: DictConfig, timeout_sec: float = 5) -> list[str]:
    """The judge's endpoint accepts a connection from this node: the judge runs on any node of the
    run, and a compute node may lack the login node's way out. Checked when the judge can be called
    (an explicit ``judge.base_url``, or a set key); a host that does not answer would mean every
    judged group falls back to its test scores."""
    import socket
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    from terminal_rl.judge.backend import JudgeBackend

    backend = JudgeBackend(cfg.judge.model, cfg.judge.base_url, cfg.judge.api_key_env)
    if not judge_can_weigh(cfg) or not (backend.base_url or backend.api_key()):
        return []
    endpoint = backend.endpoint()
    if endpoint is None:
        return []
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    # litellm's HTTP client goes through the environment's proxy (HTTPS_PROXY, NO_PROXY) as this does.
    proxy = None if proxy_bypass(url.hostname) else getproxies().get(url.scheme)
    target = urlsplit(proxy) if proxy else url
    try:
        socket.create_connection(
            (target.hostname, target.port or (443 if target.scheme == "https" else 80)), timeout_sec
        ).close()
    except OSError as error:
        through = f" through the proxy {proxy}" if proxy else ""
        return [
            f"the judge's endpoint {endpoint} ({backend.model}) does not answer from {socket.gethostname()}"
            f"{through}: {error}; give this node a way out (proxy, firewall) or point judge.base_url at an "
            "endpoint it reaches"
        ]
    return []


def check_disk(cfg: DictConfig) -> list[str]:
    """Free space where this node keeps run files (node-local root) and images (the engine's data root)."""
    from pathlib import Path

    from docker.errors import DockerException

    from terminal_rl.run_context import RunContext
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.runtime.docker_client import docker_client

    sandbox = SandboxConfig.from_node(cfg.sandbox)
    places = {"run.node_local_root": RunContext.from_config(cfg.run).node_local_dir}
    try:
        places["the container engine's data root"] = Path(docker_client(sandbox.docker_host).info()["DockerRootDir"])
    except (DockerException, KeyError):
        pass  # check_docker reports an engine that does not answer
    floor = float(cfg.hardware.min_free_disk_gb)
    problems = []
    for name, path in places.items():
        free_gb = free_disk_bytes(path) / 2**30
        if free_gb < floor:
            problems.append(
                f"{name} ({path}) has {free_gb:.1f} GB free, below hardware.min_free_disk_gb="
                f"{floor:g}; free space or point it elsewhere"
            )
    return problems


def check_model_offline(cfg: DictConfig) -> list[str]:
    """``model.path`` is a local folder or a Hub id in the run's shared Hub cache: every process of
    the run reads weights offline (HF_HUB_OFFLINE=1, ``models/hub.py``). A model the run makes itself
    (the tiny one, a warm start's SFT) is made before any worker needs it."""
    from terminal_rl.models.hub import download_command, find_offline, missing_weights
    from terminal_rl.run_context import RunContext

    if "tokenizer" in cfg.model or cfg.get("warm_start"):
        return []
    run = RunContext.from_config(cfg.run)
    if run.hub_cache is None:
        return []
    folder = find_offline(cfg.model.path, run.hub_cache)
    if folder is None:
        return [
            f"model.path={cfg.model.path!r} is neither a local folder nor in the run's Hub cache ({run.hub_cache}), "
            "and the run's processes never download (HF_HUB_OFFLINE=1): run "
            f"`{download_command(cfg.model.path, run.hub_cache)}` "
            "once where the Hub is reachable (a login node), or set model.path to a local folder"
        ]
    missing = missing_weights(folder)
    if missing:
        return [
            f"model.path={cfg.model.path!r} at {folder} is incomplete (an interrupted download?): "
            f"no {', '.join(missing)}; "
            f"run `{download_command(cfg.model.path, run.hub_cache)}` again"
        ]
    return []


def check_sandbox_mounts(cfg: DictConfig) -> list[str]:
    """The container engine sees the files this job writes under ``run.node_local_root``: sandboxes
    mount the lease folder and the toolchain from there. Under Slurm's job_container/tmpfs or a
    PrivateTmp, the job's /tmp is not the engine's, and every sandbox would find no lease and exit (every
    rollout masked). A probe container reads a file the job just wrote."""
    import secrets

    import requests
    from docker.errors import DockerException

    from terminal_rl.run_context import RunContext
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.images.base_images import common_tag
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.runtime.sandbox import sandbox_ulimits

    sandbox, run = SandboxConfig.from_node(cfg.sandbox), RunContext.from_config(cfg.run)
    try:
        client = docker_client(sandbox.docker_host)
        client.images.get(common_tag(sandbox.base_images))
    except DockerException:
        return []  # check_docker reports an engine that does not answer or a missing base image
    folder, token = run.lease_dir, secrets.token_hex(8)
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / f"probe-{token}"
    probe.write_text(token)
    # The verdict is the probe's exit status (its logs can be empty after a fast exit).
    command = ["sh", "-c", f'test "$(cat /probe/{probe.name})" = {token}']
    container = None
    try:
        container = client.containers.create(
            common_tag(sandbox.base_images),
            command,
            network_disabled=True,
            volumes={str(folder): {"bind": "/probe", "mode": "ro"}},
            ulimits=sandbox_ulimits(sandbox),
        )  # podman needs them explicit
        container.start()
        status = container.wait(timeout=120)["StatusCode"]
    except (DockerException, requests.exceptions.RequestException) as error:  # a wait that times out is requests'
        status = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        probe.unlink(missing_ok=True)
        if container is not None:
            container.remove(force=True)
    if status == 0:
        return []
    return [
        f"the container engine does not see what this job writes under run.node_local_root ({folder}): a probe "
        f"container did not read the file the job wrote there (exit {status}); the job's /tmp is likely private "
        "(Slurm job_container/tmpfs, PrivateTmp): set run.node_local_root (or $TERMINAL_RL_NODE_LOCAL_ROOT) to a "
        "node-local path the engine shares"
    ]


def check_egress_network(cfg: DictConfig) -> list[str]:
    """Tasks that allow network need the egress bridge; creating it fails once Docker's address pools
    are used up (about 31 networks with the default pools)."""
    from docker.errors import DockerException

    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.runtime.network import ensure_egress_network
    from terminal_rl.tasks.task_set import load_task_set, task_set_config

    if not any(task.limits.network for task in load_task_set(task_set_config(cfg.task_set)).tasks):
        return []
    sandbox = SandboxConfig.from_node(cfg.sandbox)
    try:
        ensure_egress_network(
            docker_client(sandbox.docker_host), sandbox.container.egress_network, sandbox.container.egress_interface
        )
    except DockerException as error:
        return [
            f"could not create the egress network {sandbox.container.egress_network!r} for tasks that allow "
            f"network: {error}; if the address pools are exhausted, remove unused networks or set "
            "default-address-pools in /etc/docker/daemon.json (README, cluster prerequisites)"
        ]
    return []


CONFIG_CHECKS: tuple[Check, ...] = (
    check_batches,
    check_parallelism,
    check_sequence,
    check_lora,
    check_memory,
    check_dataset,
    check_curriculum,
    check_history,
    check_fixture_guard,
    check_attention,
    check_judge_credentials,
)
# What lives on the run's shared filesystem: checked where the run is submitted too, before an
# allocation starts (and again on each node, which may mount it differently).
SHARED_CHECKS: tuple[Check, ...] = (check_model_offline,)
# What each node of the run needs: run here for launcher=local, on every node in the job otherwise.
NODE_CHECKS: tuple[Check, ...] = (
    check_docker,
    check_disk,
    check_checkpoint_disk,
    check_model_offline,
    check_sandbox_mounts,
    check_egress_network,
    check_flash_attention,
    check_judge_reachable,
)


def run_preflight(
    cfg: DictConfig,
    verl_check: Callable[[DictConfig], list[str]] | None = None,
    skip: tuple[str, ...] = (),
    on_this_node: bool = True,
) -> list[str]:
    """All problems of the composed config; empty means go. Support is checked first: an unsupported
    pair has no values to check the rest with. ``on_this_node=False`` leaves the node checks to the
    nodes the run will use (a login node need not run Docker)."""
    problems = check_support(cfg)
    if problems:
        return problems
    for check in CONFIG_CHECKS + (NODE_CHECKS if on_this_node else SHARED_CHECKS):
        if check.__name__ not in skip:
            problems.extend(check(cfg))
    if verl_check is not None and not problems:
        problems.extend(verl_check(cfg))
    return problems


def node_problems(cfg: DictConfig) -> list[str]:
    """The node checks alone, on the node that calls it."""
    return [problem for check in NODE_CHECKS for problem in check(cfg)]


def _hardware_name(cfg: DictConfig) -> str:
    return cfg.hardware.name
