"""Every experiment config composes and has its record, and every record has a config."""

import pytest

from terminal_rl.config import CONF_DIR, PROJECT_ROOT, compose
from terminal_rl.preflight import run_preflight

# The node and credential checks belong to the machine, not to a run's settings.
MACHINE_CHECKS = (
    "check_docker",
    "check_disk",
    "check_checkpoint_disk",
    "check_model_offline",
    "check_sandbox_mounts",
    "check_egress_network",
    "check_flash_attention",
    "check_judge_credentials",
)
CONFIGS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
RECORDS = sorted(p.name for p in (PROJECT_ROOT / "experiments").iterdir() if p.is_dir())


def test_configs_and_records_match():
    assert CONFIGS and CONFIGS == RECORDS


@pytest.mark.parametrize("name", CONFIGS)
def test_experiment_composes_and_is_documented(name):
    config = (CONF_DIR / "experiment" / f"{name}.yaml").read_text()
    assert config.startswith("# @package _global_\n# python -m terminal_rl.train experiment=" + name)
    cfg = compose("train", [f"experiment={name}", "run.id=x"])
    assert "tensor_parallel" in cfg.model_hardware, "a supported model x hardware pair"
    assert run_preflight(cfg, skip=MACHINE_CHECKS) == []
    record = (PROJECT_ROOT / "experiments" / name / "README.md").read_text()
    for heading in ("**Hypothesis**", "**Command**", "**Hardware**", "**Look at**"):
        assert heading in record, f"experiments/{name}/README.md lacks {heading}"
    assert f"experiment={name}" in record


@pytest.mark.parametrize("algorithm", ["mt_grpo", "grpo_shuffled", "grpo_negated"])
def test_the_second_rungs_arms_pass_preflight(algorithm):
    """Each arm of the second rung is its grpo arm's command plus one algorithm override; every arm
    trains two PPO mini-batches a step and validates 4 samples per task at the training temperature."""
    cfg = compose("train", ["experiment=learning_proof_multiturn", f"algorithm={algorithm}", "run.id=x"])
    assert cfg.algorithm.adv_estimator == algorithm and cfg.agent.history == "append"
    assert run_preflight(cfg, skip=MACHINE_CHECKS) == []
    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    assert cfg.data.train_batch_size == 2 * actor.ppo_mini_batch_size
    assert rollout.val_kwargs.n == 4 and rollout.val_kwargs.temperature == rollout.temperature


def test_the_learning_proofs_control_arm_passes_preflight():
    """The control (the treatment's command plus algorithm=grpo_shuffled) is a valid run too."""
    cfg = compose("train", ["experiment=learning_proof", "algorithm=grpo_shuffled", "run.id=x"])
    assert cfg.algorithm.adv_estimator == "grpo_shuffled" and cfg.agent.history == "append"
    assert run_preflight(cfg, skip=MACHINE_CHECKS) == []
    # A history the estimator cannot shuffle (one row per turn, not per trajectory) is refused by name.
    per_turn = compose("train", ["experiment=learning_proof", "algorithm=grpo_shuffled", "agent.history=per_turn"])
    assert any("grpo_shuffled" in problem for problem in run_preflight(per_turn, skip=MACHINE_CHECKS))
