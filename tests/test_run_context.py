import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.run_context import RunConfig, RunContext


def test_directories_derive_from_config(tmp_path):
    run = RunContext.from_config(RunConfig(id="exp1", output_root=str(tmp_path / "shared"), node_local_root="local"))
    assert run.shared_dir == tmp_path / "shared" / "exp1"
    assert run.task_store_dir == run.shared_dir / "task_store"
    assert run.checkpoint_dir.parent == run.log_dir.parent == run.judge_control_dir.parent == run.shared_dir
    assert run.node_local_dir == PROJECT_ROOT / "local" / "exp1"
    assert {run.image_cache_dir.parent, run.docker_data_dir.parent, run.scratch_dir.parent} == {run.node_local_dir}


def test_default_config_composes_with_env_overrides(monkeypatch):
    monkeypatch.setenv("TERMINAL_RL_RUN_ID", "from-env")
    monkeypatch.setenv("TERMINAL_RL_OUTPUT_ROOT", "/shared/runs")
    run = RunContext.from_config(compose("prepare").run)
    assert run.run_id == "from-env"
    assert str(run.shared_dir) == "/shared/runs/from-env"


def test_generated_run_id_is_a_timestamp(monkeypatch):
    monkeypatch.delenv("TERMINAL_RL_RUN_ID", raising=False)
    run_id = RunContext.from_config(compose("prepare").run).run_id
    assert len(run_id) == len("20260101-120000") and run_id[8] == "-"


@pytest.mark.parametrize("bad", ["", "a/b", ".."])
def test_bad_run_id_is_rejected(bad):
    with pytest.raises(ValueError, match="must be a non-empty name without '/'"):
        RunContext.from_config(RunConfig(id=bad, output_root="o", node_local_root="n"))


def test_unknown_key_is_named():
    with pytest.raises(ValueError, match=r"RunConfig: unknown config key\(s\) \['colour'\]"):
        RunContext.from_config(compose("prepare", ["+run.colour=red"]).run)
