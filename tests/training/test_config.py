"""The train config: every supported model x hardware pair composes and passes verl's validation,
unsupported pairs and bad settings are rejected by preflight with a clear message."""

import importlib.util
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from terminal_rl.agent.episode import Episode, EpisodeLimits
from terminal_rl.config import compose, cpu_training_dtype
from terminal_rl.integrations.verl.config_check import verl_problems
from terminal_rl.preflight import run_preflight
from terminal_rl.preflight.checks import supported_pairs
from terminal_rl.preflight.job import train_job
from tests.training.conftest import train_config

SNAPSHOT = Path(__file__).parent / "snapshots" / "qwen3_32b_h100_4x8.yaml"
# Checks of the machine (dataset on disk, Docker, free disk, flash-attn) are covered elsewhere: a GPU
# preset's node is not this one.
OFFLINE = (
    "check_dataset",
    "check_docker",
    "check_disk",
    "check_checkpoint_disk",
    "check_model_offline",
    "check_sandbox_mounts",
    "check_flash_attention",
    "check_judge_answers",
)


def split_pair(pair: str) -> tuple[str, str]:
    for hardware in ("a100_2x", "h100_4x8", "h100_2x8", "h100_8x", "h100_4x", "cpu"):
        if pair.endswith("_" + hardware):
            return pair[: -len(hardware) - 1], hardware
    raise AssertionError(pair)


@pytest.mark.parametrize("pair", supported_pairs())
def test_every_supported_pair_composes_and_passes_verl_validation(pair):
    model, hardware = split_pair(pair)
    cfg = train_config(f"model={model}", f"hardware={hardware}")
    assert run_preflight(cfg, verl_problems, skip=OFFLINE) == []
    assert cfg.model_hardware.tensor_parallel == cfg.actor_rollout_ref.rollout.tensor_model_parallel_size


@pytest.mark.parametrize(
    ("model", "hardware"), [("qwen3_32b", "cpu"), ("qwen3_8b", "cpu"), ("qwen3_32b", "a100_2x"), ("tiny", "h100_8x")]
)
def test_unsupported_pairs_are_rejected(model, hardware):
    [problem] = run_preflight(train_config(f"model={model}", f"hardware={hardware}"), verl_problems, skip=OFFLINE)
    assert problem.startswith(
        f"model={model} is not supported on hardware={hardware} (no "
        f"conf/model_hardware/{model}_{hardware}.yaml); supported model_hardware pairs: "
    )


def test_micro_batches_divide_each_data_parallel_ranks_share_not_each_gpus():
    """16 prompts x 16 rollouts over 8 data-parallel ranks (32 GPUs, Ulysses 4): 32 rows a rank, so a
    micro-batch of 16 fits (a share of 256 / 32 GPUs = 8 would refuse it)."""
    from terminal_rl.preflight.checks import check_batches

    assert (
        check_batches(train_config("model=qwen3_32b", "hardware=h100_4x8", "model_hardware.micro_batch_per_gpu=16"))
        == []
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["data.train_batch_size=3", "actor_rollout_ref.rollout.n=5"],
            "data.train_batch_size (3) x rollout.n (5) = 15 "
            "trajectories per step is not divisible by the data-parallel size (32 GPUs / Ulysses 4 = 8)",
        ),
        (
            ["actor_rollout_ref.rollout.tensor_model_parallel_size=3"],
            "tensor-parallel size 3 does not divide gpus_per_node (8)",
        ),
        (
            ["actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=6"],
            "Ulysses sequence-parallel size 6 does not divide qwen3_32b's 64 attention heads / 8 KV heads",
        ),
        (
            ["model.context.max_context_tokens=65536"],
            "agent.max_context_tokens (65536) exceeds qwen3_32b's context length (40960)",
        ),
        (
            [
                "model_hardware.optimizer_offload=false",
                "model_hardware.param_offload=false",
                "hardware=h100_8x",
                "model_hardware.micro_batch_per_gpu=4",
            ],
            "estimated training memory",
        ),
        (
            ["reward_mix=tests65_judge35", "judge.api_key_env=TERMINAL_RL_NO_SUCH_KEY"],
            "the judge can weigh in the reward, but $TERMINAL_RL_NO_SUCH_KEY (judge.api_key_env) is not set",
        ),
        (
            ["actor_rollout_ref.actor.ppo_mini_batch_size=5"],
            "actor.ppo_mini_batch_size (5) must divide data.train_batch_size (16)",
        ),
        (
            ["curriculum=judge_anneal", "trainer.total_training_steps=3", "judge.api_key_env="],
            "curriculum: the judge weight reaches 0 only at step 4, after the run's 3 training steps",
        ),
        (
            ["agent.history=per_turn", "algorithm.adv_estimator=rloo"],
            "agent.history=per_turn needs an advantage estimator",
        ),
        (["fixture_guard=sometimes"], "fixture_guard='sometimes' is not one of ['off', 'flag', 'zero']"),
        (["hardware.attention=sdpa"], "Ulysses sequence parallelism (4) needs hardware.attention=flash_attention_2"),
        (["algorithm=mt_grpo", "agent.history=per_turn"], "agent.history=per_turn needs an advantage estimator"),
        (
            ["algorithm=mt_grpo", "agent/context=summarize"],
            "agent.context.policy=summarize trains one row per context segment, which needs an advantage estimator",
        ),
        (
            ["model.lora.rank=8", "model.lora.target_modules=[q_proj,v_prj]"],
            "model.lora.target_modules ['v_prj'] match no projection of qwen3_32b",
        ),
        (
            ["model.lora.rank=8", "actor_rollout_ref.model.lora_rank=0"],
            "actor_rollout_ref.model.lora_rank=0 (alpha 16) differs from model.lora.rank=8",
        ),
        (["+model.lora.rnak=64"], "model.lora: LoRA: unknown config key(s) ['rnak']"),
        (
            ["model.lora.rank=8", "model.lora.target_modules=q_proj"],
            "model.lora.target_modules must be all-linear or a list",
        ),
        (
            ["model.lora.rank=8", "actor_rollout_ref.model.target_modules=[q_prj]"],
            "actor_rollout_ref.model.target_modules=['q_prj'] differs from model.lora.target_modules=all-linear",
        ),
        # Ulysses 4 on 32 GPUs: 8 data-parallel ranks get 32 trajectories each (not 256 / 32 GPUs = 8).
        (
            ["model_hardware.micro_batch_per_gpu=3"],
            "a mini-batch of 16 prompts x 16 rollouts gives 32 trajectories per data-parallel rank (the "
            "data-parallel size "
            "(32 GPUs / Ulysses 4 = 8))",
        ),
    ],
)
def test_seeded_bad_configs_are_rejected_with_the_right_message(overrides, message):
    cfg = train_config("model=qwen3_32b", "hardware=h100_4x8", *overrides)
    problems = run_preflight(cfg, verl_problems, skip=OFFLINE)
    assert any(p.startswith(message) for p in problems), problems


@pytest.mark.parametrize(
    ("curriculum", "reward_mix", "needs_key"),
    [
        ("none", "tests_only", False),
        ("difficulty_linear", "tests_only", False),
        ("none", "tests65_judge35", True),
        ("difficulty_linear", "tests65_judge35", True),
        ("judge_anneal", "tests_only", True),
    ],
)
def test_the_judge_key_is_required_exactly_when_some_stage_weighs_the_judge(curriculum, reward_mix, needs_key):
    cfg = train_config(
        "model=qwen3_32b",
        "hardware=h100_4x8",
        f"curriculum={curriculum}",
        f"reward_mix={reward_mix}",
        "judge.api_key_env=TERMINAL_RL_NO_SUCH_KEY",
    )
    problems = run_preflight(cfg, verl_problems, skip=OFFLINE)
    assert any("TERMINAL_RL_NO_SUCH_KEY" in p for p in problems) == needs_key, problems


@pytest.mark.parametrize(
    "overrides",
    [
        ["algorithm=mt_grpo"],
        ["algorithm=dr_grpo"],
        ["model/lora=r64"],
        ["algorithm=mt_grpo", "model/lora=r64", "credit.mask_truncated=true"],
    ],
)
def test_the_algorithm_and_lora_presets_compose_and_pass_preflight_and_verl(overrides):
    cfg = train_config("model=qwen3_8b", "hardware=h100_8x", *overrides)
    problems = run_preflight(cfg, verl_problems, skip=OFFLINE)
    if cfg.model.lora.rank and importlib.util.find_spec("vllm") is None:
        # verl asks the installed vLLM for the LoRA ranks it serves (verl/utils/config.py l. 212-215,
        # workers/rollout/vllm_rollout/utils.py l. 83-98); the CPU set installs no vLLM.
        assert problems == [
            "verl validate_config: ValueError: vllm version None not supported and SGLang also not "
            "Found. Currently supported vllm versions are 0.18.0+"
        ]
    else:
        assert problems == []


def test_async_mode_sets_verls_colocate_async_trainer_staleness_and_correction():
    """The user's async command at 4 nodes x 8 H100: verl's own keys (``trainer.v1``, the replay
    buffer's off-policy bound, counted with the training step: replay_buffer.py l. 520-529; rollout
    correction) and verl's validation pass; sync mode leaves verl's defaults."""
    cfg = train_config("model=qwen3_32b", "hardware=h100_4x8", "rollouts=async")
    assert run_preflight(cfg, verl_problems, skip=OFFLINE) == []
    assert cfg.trainer.v1.trainer_mode == "colocate_async"
    assert (
        cfg.trainer.v1.sampler.max_off_policy_threshold == 3
        and cfg.trainer.v1.sampler.max_off_policy_strategy == "wait"
    )
    assert cfg.algorithm.rollout_correction.rollout_is == "token" and not cfg.algorithm.rollout_correction.bypass_mode
    assert cfg.actor_rollout_ref.rollout.calculate_log_probs, "the rollout's own log-probs, for the weights"
    sync = train_config("model=qwen3_32b", "hardware=h100_4x8")
    assert sync.trainer.v1.trainer_mode == "sync" and sync.algorithm.rollout_correction.rollout_is is None


def test_algorithm_presets_set_verls_own_keys():
    dr = train_config("model=qwen3_8b", "hardware=h100_8x", "algorithm=dr_grpo")
    assert (dr.algorithm.adv_estimator, dr.algorithm.norm_adv_by_std_in_grpo) == ("grpo", False)
    assert dr.actor_rollout_ref.actor.loss_agg_mode == "seq-mean-token-sum-norm"
    assert dr.actor_rollout_ref.actor.loss_scale_factor == dr.data.max_response_length, "a constant token count"
    lora = train_config("model=tiny", "hardware=cpu", "model.lora.rank=8")
    verl = lora.actor_rollout_ref.model
    assert (verl.lora_rank, verl.lora_alpha, verl.target_modules, verl.lora.merge) == (8, 16, "all-linear", True)


def test_verl_rejects_what_its_own_validation_rejects():
    cfg = train_config("model=qwen3_32b", "hardware=h100_4x8", "actor_rollout_ref.actor.loss_agg_mode=bogus")
    assert any(p.startswith("verl ") and "Invalid loss_agg_mode: bogus" in p for p in verl_problems(cfg))


def test_our_model_group_and_verls_both_compose():
    cfg = train_config("model=qwen3_32b", "hardware=h100_4x8", "actor_rollout_ref.model.lora_rank=8")
    assert cfg.model.name == "qwen3_32b" and cfg.model.architecture.layers == 64
    assert cfg.actor_rollout_ref.model._target_ == "verl.workers.config.HFModelConfig"
    assert cfg.actor_rollout_ref.model.path == "Qwen/Qwen3-32B"  # ours feeds verl's by interpolation
    assert cfg.actor_rollout_ref.model.lora_rank == 8  # a verl override still reaches verl's node
    assert cfg.trainer.nnodes == 4 and cfg.trainer.n_gpus_per_node == 8


@pytest.mark.parametrize("hardware", ["cpu", "a100_2x", "h100_4x8"])
def test_the_training_dtype_is_the_hardware_presets_for_actor_reference_and_sft(hardware):
    """The CPU's fastest dtype on CPU, verl's bf16 on GPUs; verl's FSDP engine reads
    ``mixed_precision.param_dtype`` (workers/engine/fsdp/transformer_impl.py l. 391-403)."""
    expected = cpu_training_dtype() if hardware == "cpu" else "bf16"
    train = train_config(f"hardware={hardware}").actor_rollout_ref
    sft = compose("sft", ["run.id=test", f"hardware={hardware}"]).verl
    for engine in (train.actor.fsdp_config, train.ref.fsdp_config, sft.engine):
        assert engine.mixed_precision.param_dtype == expected


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "expected"), [(False, False, "fp32"), (True, False, "bf16"), (False, True, "bf16")]
)
def test_a_cpu_trains_in_bf16_only_when_it_computes_bf16_natively(monkeypatch, avx512_bf16, amx, expected):
    import torch

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert cpu_training_dtype() == expected
    assert train_config("hardware=cpu").actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == expected


def test_the_learning_proof_trains_in_fp32_on_every_cpu(monkeypatch):
    """Pinned, so its cached warm start and every seed's figures compare across machines."""
    import torch

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    cfg = train_config("experiment=learning_proof")
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "fp32"


def test_flattened_config_snapshot_for_qwen3_32b_on_h100_4x8():
    cfg = train_config("model=qwen3_32b", "hardware=h100_4x8")
    flat = yaml.safe_load(OmegaConf.to_yaml(cfg, resolve=True))
    if not SNAPSHOT.is_file():  # first run writes it; later runs compare
        SNAPSHOT.write_text(yaml.safe_dump(flat, sort_keys=True))
    assert flat == yaml.safe_load(SNAPSHOT.read_text()), (
        "the composed qwen3_32b x h100_4x8 config drifted from tests/training/snapshots; if intended, delete the "
        "snapshot and rerun to record the new one"
    )


def test_a_ten_turn_episode_is_not_cut_at_four_thousand_tokens():
    limits = EpisodeLimits(
        max_turns=50, max_tokens_per_turn=4000, max_context_tokens=32768, max_consecutive_parse_errors=3
    )
    episode = Episode.__new__(Episode)
    episode.limits = limits
    context, budgets = 1500, []
    for _ in range(10):  # each turn writes 2,000 tokens and gets a 800-token observation back
        budgets.append(episode.turn_max_tokens(context))
        context += 2000 + 800
    assert budgets == [4000] * 10, "every turn may use the full per-turn cap while context remains"
    assert context == 29500 and episode.turn_max_tokens(31000) == 1768


@pytest.mark.docker
def test_node_checks_name_a_disk_without_room():
    from terminal_rl.training.node_checks import check_disk

    problems = check_disk(train_job(train_config("hardware=cpu", "model=tiny", "hardware.min_free_disk_gb=1000000")))
    assert [p.split(" (")[0] for p in problems] == ["run.node_local_root", "the container engine's data root"]
    assert "below hardware.min_free_disk_gb=1e+06" in problems[0]
    assert check_disk(train_job(train_config("hardware=cpu", "model=tiny", "hardware.min_free_disk_gb=1"))) == []


def test_node_checks_find_a_judge_endpoint_this_node_cannot_reach_or_use(monkeypatch):
    """Loopback only: an endpoint that answers one tiny request passes, one that refuses the key is
    named with the fix, a closed port is named; without a base_url or a key the judge cannot be
    called, and nothing is sent (the provider's own host is only named)."""
    import socket

    from terminal_rl.judge.backend import JudgeBackend
    from terminal_rl.training.node_checks import check_judge_answers
    from tests.fake_llm_server import FakeLLMServer, Fault
    from tests.support import free_port

    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    judged = ("hardware=cpu", "model=tiny", "reward_mix=tests65_judge35")
    served = (*judged, "judge.model=openai/test-judge")
    with FakeLLMServer(["ok"]) as server:
        live = server.base_url
        assert check_judge_answers(train_job(train_config(*served, f"judge.base_url={live}"))) == []
    assert server.requests[0]["max_tokens"] == 8, "one tiny request"
    with FakeLLMServer([Fault(401)]) as server:
        [problem] = check_judge_answers(train_job(train_config(*served, f"judge.base_url={server.base_url}")))
    assert "the judge's model does not answer from" in problem and "AuthenticationError" in problem
    assert "the key is refused: set the variable api_key_env names" in problem and len(server.requests) == 1
    closed = f"http://127.0.0.1:{free_port()}/v1"
    [problem] = check_judge_answers(train_job(train_config(*judged, f"judge.base_url={closed}")))
    assert problem.startswith(
        f"the judge's endpoint {closed} (anthropic/claude-sonnet-4-20250514) does not answer from "
    )
    assert (
        check_judge_answers(
            train_job(train_config("hardware=cpu", "model=tiny", "reward_mix=tests_only", f"judge.base_url={closed}"))
        )
        == []
    ), "the judge has no weight"
    # Behind the environment's proxy the proxy is what must answer (the judge's host is never looked up).
    monkeypatch.setenv("HTTPS_PROXY", closed.removesuffix("/v1"))
    [problem] = check_judge_answers(train_job(train_config(*judged, "judge.base_url=https://judge.invalid/v1")))
    assert f"through the proxy {closed.removesuffix('/v1')}" in problem
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("no key, no base_url: no traffic"))
    assert check_judge_answers(train_job(train_config(*judged))) == []
    assert JudgeBackend("anthropic/claude-sonnet-4-20250514").endpoint() == "https://api.anthropic.com"
    assert JudgeBackend("openai/gpt-4o").endpoint().startswith("https://api.openai.com")
    assert JudgeBackend("openai/gpt-4o", base_url=live).endpoint() == live


@pytest.mark.docker
def test_node_checks_create_the_egress_network_when_a_task_allows_network():
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.training.node_checks import check_egress_network

    cfg = train_config("hardware=cpu", "model=tiny", "task_set=tbrl_smoke", "task_set.default_limits.network=true")
    assert check_egress_network(train_job(cfg)) == []
    assert docker_client().networks.get(cfg.sandbox.container.egress_network).attrs["Driver"] == "bridge"


def test_a_lora_preset_trains_at_its_own_rate_and_preflight_warns_below_the_floor():
    from terminal_rl.preflight.checks import LORA_LR_FLOOR, notes

    lora = train_config("model/lora=r64")
    assert lora.actor_rollout_ref.actor.optim.lr == 1e-5 and train_config().actor_rollout_ref.actor.optim.lr == 1e-6
    assert not [n for n in notes(lora) if n.startswith("warning: a LoRA run")]
    slow = train_config("model.lora.rank=16")  # LoRA by rank alone: full fine-tuning's rate
    assert slow.actor_rollout_ref.actor.optim.lr < LORA_LR_FLOOR
    assert [n for n in notes(slow) if n.startswith("warning: a LoRA run (rank 16) at actor lr 1e-06, below 5e-06")]


def test_preflight_refuses_checkpoints_that_do_not_fit_and_counts_a_resumes_own(tmp_path, monkeypatch):
    """Qwen3-8B (~98 GB a checkpoint), 2 kept: 3 at the peak (a save is written before the oldest
    goes) do not fit in 250 GB; after a resume with 2 on disk, one more does."""
    import shutil
    from collections import namedtuple

    from terminal_rl.training.node_checks import check_checkpoint_disk

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 250 * 10**9))
    cfg = train_config("hardware=h100_4x8", f"trainer.default_local_dir={tmp_path}")
    [problem] = check_checkpoint_disk(train_job(cfg))
    assert "2 kept (trainer.max_actor_ckpt_to_keep=2) x 98.3 GB" in problem and "294.8 GB more" in problem
    assert "lower trainer.max_actor_ckpt_to_keep" in problem
    for step in (20, 40):
        (tmp_path / f"global_step_{step}").mkdir()
    assert check_checkpoint_disk(train_job(cfg)) == []


def test_preflight_tells_a_context_policy_widens_append_rows():
    from terminal_rl.preflight.checks import notes

    [note] = [n for n in notes(train_config("agent/context=elide")) if n.startswith("agent.context")]
    assert "rows of up to 57440 tokens (a segment's prompt up to 28768" in note
    assert not [n for n in notes(train_config("agent/context=elide", "agent.history=per_turn")) if "agent.context" in n]


def test_preflight_refuses_async_settings_it_cannot_train():
    """verl's separate_async trainer runs without this project's bookkeeping, and a staleness, a
    stale-sample rule or a prefetch outside what conf/rollouts/async.yaml means is refused with why."""
    import copy

    from terminal_rl.preflight.checks import check_rollouts

    async_config = train_config("rollouts=async")
    assert check_rollouts(async_config) == []
    for key, value, refusal in [
        ("trainer.v1.trainer_mode", "separate_async", "trainer_mode=separate_async: choose rollouts=sync or"),
        ("async_rollouts.max_staleness", 0, "max_staleness=0 trains only on the weights"),
        ("async_rollouts.max_staleness", 1.5, "max_staleness=1.5: a whole number of steps"),
        ("async_rollouts.stale", "skip", "async_rollouts.stale=skip: choose wait (nothing lost) or drop"),
        ("async_rollouts.prefetch_batches", 0, "prefetch_batches=0: at least one batch"),
    ]:
        cfg = copy.deepcopy(async_config)
        OmegaConf.update(cfg, key, value)
        problems = check_rollouts(cfg)
        assert len(problems) == 1 and refusal in problems[0], (key, value, problems)
