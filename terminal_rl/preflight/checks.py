"""Preflight: every check that can fail a run, done in seconds before any job starts or is submitted.

The config checks here read the composed config whole, as the door of every training app: they check
that its parts agree (model x hardware x verl's batches, memory, LoRA, curriculum, history mode...).
The node checks (engine, disk, mounts, network, weights) take the typed ``TrainJob`` and run on each
node (``training/node_checks.py``). Each check returns the problems it finds, one clear message each
(the setting, its value, the fix); ``run_preflight`` (``preflight/__init__.py``) collects them
all instead of stopping at the first. ``notes`` tells what does not refuse a run: warnings, and
what a step and the checkpoints will cost. verl's own validation runs through
``terminal_rl.integrations.verl`` (the only package that imports verl).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.tokens import History
from terminal_rl.config import CONF_DIR, project_path, to_dataclass
from terminal_rl.models.lora import LoRA, projections, trainable_parameters, unknown_modules
from terminal_rl.rewards.fixture_guard import FixtureGuard
from terminal_rl.training.costs import EpisodeCost, EpisodeShape, checkpoint_gb, episode_cost
from terminal_rl.training.job import CheckpointPlan
from terminal_rl.training.memory import estimate
from terminal_rl.training.node_checks import split_of

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


def context_note(cfg: DictConfig) -> list[str]:
    """A context policy in append history: a segment's prompt may hold the rewritten context, so a row's
    width (verl's prompt plus response length) is up to twice the context."""
    policy = OmegaConf.select(cfg, "agent.context.policy", default="none")
    if policy == "none" or cfg.agent.history != "append":
        return []
    width = cfg.data.max_prompt_length + cfg.data.max_response_length
    padding = "without padding (hardware.remove_padding)" if cfg.hardware.remove_padding else "padded to it"
    return [
        f"agent.context.policy={policy} in append history: rows of up to {width} tokens (a segment's prompt up to "
        f"{cfg.data.max_prompt_length}, its response up to {cfg.data.max_response_length}), {padding}; per_turn rows "
        f"are at most {cfg.agent.max_context_tokens}"
    ]


def notes(cfg: DictConfig) -> list[str]:
    """What preflight tells without refusing a run."""
    return [
        *lora_lr_warning(cfg),
        *step_cost_note(cfg),
        *sandbox_note(cfg),
        *context_note(cfg),
        checkpoint_plan(cfg).line,
    ]


def checkpoint_plan(cfg: DictConfig) -> CheckpointPlan:
    """The checkpoints kept at most and their size, from the model preset's."""
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
    return CheckpointPlan(int(kept), size, project_path(trainer.default_local_dir), line)


def _split(cfg: DictConfig) -> tuple[list, list]:
    from terminal_rl.tasks.task_set import task_set_config

    return split_of(task_set_config(cfg.task_set))


def check_dataset(cfg: DictConfig) -> list[str]:
    from terminal_rl.tasks.loaders import TaskSourceError

    try:
        train, val = _split(cfg)
    except (TaskSourceError, ValueError) as error:
        return [f"task_set: {error}"]
    if not train and not val:
        return [f"task_set {cfg.task_set.path}: no valid task (run `python -m terminal_rl.tasks` for the report)"]
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
    """``agent.history=per_turn``, and in append history a context policy that rewrites the context
    (``agent.context``: each rewrite starts a segment), train several rows per trajectory: only GRPO
    copies a session's advantage from its last row to the others (verl ``trainer/ppo/v1/utils.py``
    l. 167-217)."""
    per_row = {"grpo"}
    if cfg.algorithm.adv_estimator in per_row:
        return []
    context = OmegaConf.select(cfg, "agent.context.policy", default="none")
    if cfg.agent.history == "per_turn":
        return [
            f"agent.history=per_turn needs an advantage estimator that gives every turn its trajectory's "
            f"advantage ({sorted(per_row)}), not algorithm.adv_estimator={cfg.algorithm.adv_estimator}; "
            "use agent.history=append" + (" with agent/context=none" if context != "none" else "")
        ]
    if context != "none":
        return [
            f"agent.context.policy={context} trains one row per context segment, which needs an "
            f"advantage estimator that gives every row its trajectory's advantage ({sorted(per_row)}), not "
            f"algorithm.adv_estimator={cfg.algorithm.adv_estimator}; use agent/context=none"
        ]
    return []


def check_rollouts(cfg: DictConfig) -> list[str]:
    """``rollouts=async``'s settings (conf/rollouts/async.yaml), and verl's trainer mode: ours are
    installed on verl's sync and colocate_async trainers only (integrations/verl/trainer.py)."""
    mode = cfg.trainer.v1.trainer_mode
    if mode not in ("sync", "colocate_async"):
        return [
            f"trainer.v1.trainer_mode={mode}: choose rollouts=sync or rollouts=async (verl's sync and "
            "colocate_async trainers, with this project's bookkeeping)"
        ]
    settings = cfg.get("async_rollouts")
    if mode == "sync" or settings is None:
        return []

    def whole(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    problems = []
    if not whole(settings.max_staleness) or settings.max_staleness < 0:
        problems.append(f"async_rollouts.max_staleness={settings.max_staleness}: a whole number of steps")
    elif settings.max_staleness == 0:
        problems.append(
            "async_rollouts.max_staleness=0 trains only on the weights that wrote the samples, which is sync "
            "training with extra waits: use rollouts=sync, or a staleness of 1 or more"
        )
    if settings.stale not in ("wait", "drop"):
        problems.append(f"async_rollouts.stale={settings.stale}: choose wait (nothing lost) or drop")
    if not isinstance(settings.prefetch_batches, (int, float)) or isinstance(settings.prefetch_batches, bool):
        problems.append(f"async_rollouts.prefetch_batches={settings.prefetch_batches}: a number of batches")
    elif settings.prefetch_batches <= 0:
        problems.append(f"async_rollouts.prefetch_batches={settings.prefetch_batches}: at least one batch")
    return problems


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


CONFIG_CHECKS: tuple[Check, ...] = (
    check_batches,
    check_parallelism,
    check_sequence,
    check_lora,
    check_memory,
    check_dataset,
    check_curriculum,
    check_history,
    check_rollouts,
    check_fixture_guard,
    check_attention,
    check_judge_credentials,
)


def _hardware_name(cfg: DictConfig) -> str:
    return cfg.hardware.name
