"""Multi-turn SFT on verl's own SFT trainer (``verl.trainer.sft_trainer``), and DPO on it
(``dpo_trainer.py``), started under torchrun.

We write verl a config of its own (``verl_sft.yaml``: verl's ``sft_trainer_engine`` defaults with our
keys on top, so verl composes and validates it), run it with the hardware preset's environment
(the CPU platform on this machine), keep its output in ``train.log`` and show one line per step from
its metrics file. verl saves sharded checkpoints plus the Hugging Face model
(``global_step_N/huggingface``); the last one is linked as ``<output_dir>/model`` (with LoRA, merged
into a plain model there).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

from terminal_rl.config import PROJECT_ROOT, project_path
from terminal_rl.console import MetricsFollower
from terminal_rl.integrations.verl.driver import PLUGIN
from terminal_rl.integrations.verl.export import merge_checkpoint

# A Python exception's last line in the trainer's output ("TypeError: ...").
ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception): ")
# Seconds between two step lines on the console (every step is in the metrics file).
ECHO_EVERY_SEC = 5.0


# What a step's console line shows: (label, metric, format), per trainer.
SFT_LINE = (("loss", "train/loss", ".4f"), ("grad norm", "train/grad_norm", ".3f"), ("lr", "train/lr", ".2e"))
DPO_LINE = (
    ("loss", "train/loss", ".4f"),
    ("margin", "dpo/margin", ".4f"),
    ("accuracy", "dpo/accuracy", ".2f"),
    ("grad norm", "train/grad_norm", ".3f"),
)


@dataclass(frozen=True)
class TrainerResult:
    model: Path
    losses: list[float]
    log: Path


def verl_sft_config(verl: DictConfig) -> dict:
    """The config file verl's SFT trainer reads: its defaults, then our ``verl`` keys (resolved)."""
    ours = OmegaConf.to_container(verl, resolve=True)
    return {
        "hydra": {"searchpath": ["pkg://verl.trainer.config"]},
        "defaults": ["sft_trainer_engine", "_self_"],
        **ours,
    }


def check_inputs(verl: DictConfig, kind: str) -> None:
    missing = [f for f in verl.data.train_files if not project_path(f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{kind.upper()} data {missing} not found: build it with `python -m terminal_rl.datasets "
            f"run.id=...` or point verl.data.train_files at {kind}.parquet files"
        )
    model = project_path(verl.model.path)
    if model.exists() and not (model / "config.json").is_file():
        raise FileNotFoundError(f"model.path {model} has no config.json (a Hugging Face model folder)")


def run_sft(verl: DictConfig, hardware_env: dict, cpus_per_node: int, out: Path, echo=print) -> TrainerResult:
    """Run verl's SFT trainer (``verl``: the sft config's ``verl`` section, verl's own keys) to the
    end, in the hardware preset's environment (``hardware_env``); ``echo`` gets a step's line at most
    every ``ECHO_EVERY_SEC`` (the first step's at once). A model path that is not a local folder goes
    to verl as it is (a Hub id)."""
    return _run("sft", "verl.trainer.sft_trainer", SFT_LINE, verl, hardware_env, cpus_per_node, out, echo)


def run_dpo(verl: DictConfig, hardware_env: dict, cpus_per_node: int, out: Path, echo=print) -> TrainerResult:
    """Run DPO on verl's SFT trainer (``dpo_trainer.py``; ``verl``: the dpo config's ``verl`` section),
    as ``run_sft`` runs SFT."""
    module = "terminal_rl.integrations.verl.dpo_trainer"
    return _run("dpo", module, DPO_LINE, verl, hardware_env, cpus_per_node, out, echo)


def _run(kind, module, line, verl, hardware_env, cpus_per_node, out, echo) -> TrainerResult:
    """Run ``module`` (a trainer taking verl's ``--config-path``/``--config-name``) under torchrun."""
    check_inputs(verl, kind)
    out.mkdir(parents=True, exist_ok=True)
    config_file, metrics, log = out / "verl_sft.yaml", out / "metrics.jsonl", out / "train.log"
    config_file.write_text(yaml.safe_dump(verl_sft_config(verl), sort_keys=False), encoding="utf-8")
    env = {
        **os.environ,
        **{k: str(v) for k, v in hardware_env.items()},
        "VERL_USE_EXTERNAL_MODULES": PLUGIN,
        "VERL_FILE_LOGGER_PATH": str(metrics),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    if env.get("VERL_PLATFORM") == "cpu":
        env.pop("CUDA_VISIBLE_DEVICES", None)
        # The trainer has the machine to itself (the cpu preset's one thread is for Ray's many processes).
        env["OMP_NUM_THREADS"] = str(max(1, cpus_per_node // int(verl.trainer.n_gpus_per_node)))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={verl.trainer.n_gpus_per_node}",
        "-m",
        module,
        f"--config-path={out.resolve()}",
        f"--config-name={config_file.stem}",
    ]
    metrics.unlink(missing_ok=True)
    losses: list[float] = []
    last_echo = [0.0]

    def on_step(step: int, data: dict) -> None:
        if "train/loss" in data:
            losses.append(data["train/loss"])
            if time.monotonic() - last_echo[0] < ECHO_EVERY_SEC:
                return
            last_echo[0] = time.monotonic()
            shown = "  ".join(f"{label} {data.get(key, 0):{spec}}" for label, key, spec in line)
            echo(f"{kind} step {step}: {shown}  tokens {int(data.get('train/global_tokens', 0))}")

    with log.open("w", encoding="utf-8") as output, MetricsFollower(metrics, on_step):
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if process.returncode != 0:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        # The trainer's own exception, not torchrun's ChildFailedError banner after it.
        causes = [line for line in lines if ERROR_LINE.match(line) and "ChildFailedError" not in line]
        cause = f" ({causes[-1].strip()})" if causes else ""
        tail = "\n".join(lines[-30:])
        raise RuntimeError(f"{tail}\n{module} exited with {process.returncode}{cause}; full output: {log}")
    model = _link_last_model(project_path(verl.trainer.default_local_dir), out / "model")
    return TrainerResult(model, losses, log)


def _link_last_model(checkpoints: Path, link: Path) -> Path:
    """``link`` -> the last checkpoint's Hugging Face model. A LoRA checkpoint's ``huggingface/`` holds
    peft's wrapped weights (verl saves the wrapped module's state dict): it is merged into a plain
    model at ``link`` instead."""
    step = (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip()
    checkpoint = checkpoints / f"global_step_{step}"
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    if (checkpoint / "lora_train_meta.json").is_file():
        merge_checkpoint(checkpoint, link)
        return link
    model = checkpoint / "huggingface"
    if not (model / "config.json").is_file():
        raise RuntimeError(f"verl saved no Hugging Face model in {model} (checkpoint.save_contents needs hf_model)")
    link.symlink_to(model.resolve(), target_is_directory=True)
    return link
