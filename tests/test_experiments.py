"""Every experiment config composes and has its record, and every record has a config."""


import pytest

from terminal_rl.config import CONF_DIR, PROJECT_ROOT, compose
from terminal_rl.training.preflight import run_preflight

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
    # The run's own settings pass preflight (the node and credential checks belong to the machine).
    machine = ("check_docker", "check_disk", "check_egress_network", "check_flash_attention", "check_judge_credentials")
    assert run_preflight(cfg, skip=machine) == []
    record = (PROJECT_ROOT / "experiments" / name / "README.md").read_text()
    for heading in ("**Hypothesis**", "**Command**", "**Hardware**", "**Look at**"):
        assert heading in record, f"experiments/{name}/README.md lacks {heading}"
    assert f"experiment={name}" in record
