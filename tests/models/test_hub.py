"""Weights without the Hub at run time, against huggingface_hub's own offline lookup: a Hub id is
found in the run's shared cache laid out as huggingface_hub lays it out, a missing one is refused
by preflight with the command that fills the cache, and the run's processes are told to stay offline."""

import json
from pathlib import Path

from terminal_rl.config import compose
from terminal_rl.models.hub import find_offline, offline_environment
from terminal_rl.preflight.job import train_job
from terminal_rl.run_context import RunContext
from terminal_rl.training.node_checks import check_model_offline


def cached(hub_cache: Path, repo_id: str) -> Path:
    """A snapshot as huggingface_hub writes it: models--org--name/{refs/main, snapshots/<rev>/...}."""
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"")
    return snapshot


def test_a_hub_id_resolves_from_the_shared_cache_offline_and_a_local_folder_is_itself(tmp_path):
    snapshot = cached(tmp_path / "hub", "Qwen/Qwen3-8B")
    assert find_offline("Qwen/Qwen3-8B", tmp_path / "hub") == snapshot
    assert find_offline("Qwen/Qwen3-32B", tmp_path / "hub") is None
    assert find_offline(str(snapshot), tmp_path / "elsewhere") == snapshot


def test_preflight_refuses_a_model_it_cannot_find_offline(tmp_path):
    cfg = compose("train", ["run.id=r", f"run.output_root={tmp_path}", "hardware=h100_4x8"])
    [problem] = check_model_offline(train_job(cfg))
    assert "model.path='Qwen/Qwen3-8B' is neither a local folder nor in the run's Hub cache" in problem
    assert f"hf download Qwen/Qwen3-8B --cache-dir {tmp_path / 'hub_cache'}" in problem
    cached(tmp_path / "hub_cache", "Qwen/Qwen3-8B")
    assert check_model_offline(train_job(cfg)) == []
    tiny = compose("train", ["run.id=r", f"run.output_root={tmp_path}", "hardware=cpu", "model=tiny"])
    assert check_model_offline(train_job(tiny)) == [], "a model the run generates itself"


def test_an_interrupted_download_is_refused_by_the_shard_it_lacks(tmp_path):
    from terminal_rl.integrations.verl.config_check import verl_problems
    from terminal_rl.preflight import run_preflight

    snapshot = cached(tmp_path / "hub_cache", "Qwen/Qwen3-8B")
    (snapshot / "model.safetensors").unlink()
    (snapshot / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})
    )
    (snapshot / "model-00001-of-00002.safetensors").write_bytes(b"")
    cfg = compose("train", ["run.id=r", f"run.output_root={tmp_path}", "hardware=h100_4x8", "launcher=slurm"])
    [problem] = check_model_offline(train_job(cfg))
    assert "is incomplete (an interrupted download?): no model-00002-of-00002.safetensors" in problem
    assert problem in run_preflight(cfg, verl_problems, on_this_node=False), "found at submission, not on the nodes"
    (snapshot / "model-00002-of-00002.safetensors").write_bytes(b"")
    assert check_model_offline(train_job(cfg)) == []


def test_every_process_of_a_run_is_told_to_read_the_shared_cache_offline(tmp_path):
    from terminal_rl.integrations.verl.driver import run_environment

    cfg = compose("train", ["run.id=r", f"run.output_root={tmp_path}", "hardware=h100_4x8"])
    env = run_environment(RunContext.from_config(cfg.run), cfg.logger.wandb_mode, cfg.hardware.env)
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HUB_CACHE"] == str(tmp_path / "hub_cache")
    assert offline_environment(tmp_path)["TRANSFORMERS_OFFLINE"] == "1"
