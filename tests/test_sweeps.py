"""Every sweep config has its record (and vice versa), and every point of it composes to a supported
model x hardware pair."""

import itertools

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from terminal_rl.config import CONF_DIR, PROJECT_ROOT, compose

CONFIGS = sorted(p.stem for p in (CONF_DIR / "sweep").glob("*.yaml"))
RECORDS = sorted(p.name for p in (PROJECT_ROOT / "sweeps").iterdir() if p.is_dir())


def points(name: str) -> list[list[str]]:
    """The sweep's points as override lists, expanded by Hydra's own override parser."""
    params = OmegaConf.load(CONF_DIR / "sweep" / f"{name}.yaml").hydra.sweeper.params
    overrides = OverridesParser.create().parse_overrides([f"{key}={value}" for key, value in params.items()])
    axes = [[f"{o.get_key_element()}={value}" for value in o.sweep_string_iterator()] for o in overrides]
    return [list(point) for point in itertools.product(*axes)]


def test_configs_and_records_match():
    assert CONFIGS and CONFIGS == RECORDS


def test_the_issue_s_sweeps_have_the_points_it_names():
    assert points("reward_mix_ablation") == [
        [f"experiment=reward_ablation_{arm}"] for arm in ("tests_only", "tests65_judge35", "judge_anneal")
    ]
    assert points("curriculum_comparison") == [
        [f"curriculum={kind}"] for kind in ("none", "difficulty_linear", "judge_anneal")
    ]


@pytest.mark.parametrize("name", CONFIGS)
def test_every_point_composes_and_the_sweep_is_documented(name):
    config = (CONF_DIR / "sweep" / f"{name}.yaml").read_text()
    assert config.startswith(f"# @package _global_\n# python -m terminal_rl.train --multirun sweep={name}")
    kinds = set()
    for point in points(name):
        cfg = compose("train", [f"sweep={name}", *point, "run.id=x"])
        assert "tensor_parallel" in cfg.model_hardware, f"{point}: a supported model x hardware pair"
        kinds.add((cfg.curriculum.kind, cfg.reward_mix.weights.get("judge", 0)))
    assert len(kinds) == len(points(name)), "every point trains differently"
    record = (PROJECT_ROOT / "sweeps" / name / "README.md").read_text()
    for heading in ("**Hypothesis**", "**Command**", "**Points**", "**Hardware**", "**Look at**"):
        assert heading in record, f"sweeps/{name}/README.md lacks {heading}"
    assert f"sweep={name}" in record
