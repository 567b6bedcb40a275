"""What launcher=slurm asks Slurm for: resources from the hardware preset, cluster settings from the
launcher config and the git-ignored conf/local/slurm.yaml; and how often a preempted job requeues."""

import shutil

import pytest

from terminal_rl.config import CONF_DIR, PROJECT_ROOT, compose, to_dataclass
from terminal_rl.launch.slurm import SlurmLauncherConfig, slurm_parameters

LOCAL = CONF_DIR / "local" / "slurm.yaml"


def parameters(*overrides):
    cfg = compose("train", ["launcher=slurm", "run.id=r1", *overrides])
    return slurm_parameters(cfg.hardware, to_dataclass(cfg.launcher, SlurmLauncherConfig), "r1")


@pytest.fixture
def local_slurm_settings():
    """The example copied to conf/local/slurm.yaml, as a user would (any real one is put back)."""
    backup = LOCAL.read_bytes() if LOCAL.exists() else None
    created = not LOCAL.parent.exists()
    LOCAL.parent.mkdir(exist_ok=True)
    shutil.copy(PROJECT_ROOT / "slurm" / "local_slurm.example.yaml", LOCAL)
    yield
    if backup is not None:
        LOCAL.write_bytes(backup)
    elif created:
        shutil.rmtree(LOCAL.parent)
    else:
        LOCAL.unlink()


def test_resources_come_from_the_hardware_preset():
    assert parameters("hardware=h100_4x8", "model=qwen3_32b") == {
        "nodes": 4, "tasks_per_node": 1, "cpus_per_task": 96, "mem_gb": 1000, "gpus_per_node": 8,
        "timeout_min": 1440, "name": "trl-r1", "slurm_signal_delay_s": 120}
    assert "gpus_per_node" not in parameters("hardware=cpu", "model=tiny"), "CPU runs ask Slurm for no GPU"


def test_local_settings_merge_over_the_launcher_config(local_slurm_settings):
    got = parameters("hardware=h100_4x8", "model=qwen3_32b")
    assert (got["slurm_partition"], got["slurm_account"], got["slurm_qos"], got["slurm_constraint"]) == \
        ("gpu", "my-lab", "normal", "h100")
    assert got["slurm_additional_parameters"] == {"exclusive": True}
    assert parameters("hardware=h100_4x8", "model=qwen3_32b", "launcher.partition=debug")["slurm_partition"] == "debug"


def test_local_settings_are_git_ignored():
    assert "conf/local/" in (PROJECT_ROOT / ".gitignore").read_text().splitlines()


def test_requeues_stop_at_max_restarts():
    """submitit asks the job body what to resubmit on preemption or timeout: itself with one more
    restart counted, until launcher.max_restarts is used up."""
    from omegaconf import OmegaConf

    from terminal_rl.launch.slurm import SlurmRun

    config = OmegaConf.to_container(compose("train", ["launcher=slurm", "run.id=r1", "launcher.max_restarts=2"]))
    again = SlurmRun(config, restarts=1).checkpoint()
    assert again.function.restarts == 2 and again.function.config == config
    assert SlurmRun(config, restarts=2).checkpoint() is None
