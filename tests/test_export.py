"""Export: which checkpoint is picked, and the CPU run's checkpoints merged into Hugging Face folders
by verl's model merger (loadable by transformers, and really the weights of the step asked for)."""

import os
import subprocess
import sys

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.export import checkpoint_step


@pytest.fixture
def checkpoints(tmp_path):
    for step in (10, 20, 30):
        (tmp_path / f"global_step_{step}").mkdir()
    return tmp_path


def test_latest_follows_verl_s_marker_else_the_highest_step(checkpoints):
    assert checkpoint_step(checkpoints, "latest") == 30
    (checkpoints / "latest_checkpointed_iteration.txt").write_text("20\n")
    assert checkpoint_step(checkpoints, "latest") == 20
    assert checkpoint_step(checkpoints, 10) == 10


def test_a_missing_step_names_the_available_ones(checkpoints, tmp_path_factory):
    with pytest.raises(FileNotFoundError, match=r"no checkpoint for step 15 .*available steps: \[10, 20, 30\]"):
        checkpoint_step(checkpoints, 15)
    with pytest.raises(FileNotFoundError, match="trainer.save_freq"):
        checkpoint_step(tmp_path_factory.mktemp("empty"), "latest")


def export(run_dir, *overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERMINAL_RL_RUN")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "terminal_rl.export",
            f"run.id={run_dir.name}",
            f"run.output_root={run_dir.parent}",
            *overrides,
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.verl
@pytest.mark.docker
def test_cpu_run_checkpoints_export_to_loadable_hugging_face_folders(cpu_run):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run_dir = cpu_run["dir"]
    assert f"exported step 4 of run ci to {run_dir / 'hf' / 'global_step_4'}" in export(run_dir)
    export(run_dir, "step=2")
    folders = [run_dir / "hf" / f"global_step_{step}" for step in (2, 4)]
    for folder in folders:
        assert {"model.safetensors", "config.json", "tokenizer.json", "chat_template.jinja"} <= {
            p.name for p in folder.iterdir()
        }
    from safetensors import safe_open

    # The run trains LoRA (experiment=cpu_smoke): the export is merged (every weight under its Hugging
    # Face name), the adapter beside it, its B trained away from verl's zero init.
    _, info = AutoModelForCausalLM.from_pretrained(folders[1], output_loading_info=True)
    assert not any(info.values()), info
    with safe_open(str(folders[1] / "lora_adapter" / "adapter_model.safetensors"), "pt") as adapter:
        assert any(adapter.get_tensor(k).abs().sum() > 0 for k in adapter.keys() if "lora_B" in k), "steps trained B"
    first, last = (AutoModelForCausalLM.from_pretrained(folder) for folder in folders)
    tokenizer = AutoTokenizer.from_pretrained(folders[1])
    assert last(**tokenizer("ls -la", return_tensors="pt")).logits.shape[-1] == last.config.vocab_size
    changed = [name for name, weight in last.state_dict().items() if not torch.equal(weight, first.state_dict()[name])]
    assert changed, "steps 3 and 4 updated the weights: the two exports differ"
