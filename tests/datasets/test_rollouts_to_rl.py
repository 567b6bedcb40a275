"""From episodes to datasets to SFT to RL, end to end on this machine: scripted and oracle evaluation
episodes in real sandboxes plus the shared CPU run's rollouts -> `python -m terminal_rl.datasets
build` (a planted forged-fixture episode is removed with its reason) -> `python -m terminal_rl.sft`
(verl's SFT trainer, a few steps, the loss falls) -> the SFT model is evaluated. That an SFT model
starts a GRPO run is the main command's test (tests/training/test_main_command.py: the warm start's
SFT model trains), and LoRA with MT-GRPO is the shared CPU run's (tests/training/test_cpu_training.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from terminal_rl.config import PROJECT_ROOT
from tests.agent.test_episodes import PARSER
from tests.conftest import SMOKE_TASKS
from tests.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.docker

CSV_TASK = "csv-file-parsing-amount-sum"
WRITE_PARSER = (
    "<write_file>\nfile_path: parser.py\ncontent: |\n"
    + "".join(f"  {line}\n" for line in PARSER.splitlines())
    + "</write_file>"
)
FINISH = "<finish>\nmessage: done\n</finish>"
# Attempts of the CSV task: honest, a forgery of the input the tests read (data.csv rewritten so
# that any parser prints the expected 425), and one that does nothing.
HONEST = ["<read_file>\nfile_path: /app/data.csv\n</read_file>", WRITE_PARSER, FINISH]
FORGED = ["<bash>\ncmd: printf 'ID,Name,Amount\\n1,X,425\\n' > /app/data.csv\n</bash>", WRITE_PARSER, FINISH]
NOTHING = [FINISH]
COUNT_LINES = ["<bash>\ncmd: cat /app/data/*.txt | wc -l > /app/total.txt\n</bash>", FINISH]


def app(module, *args, timeout=900):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN"))}
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=timeout,
    )
    assert result.returncode == 0, f"{module} {args}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


@pytest.fixture(scope="module")
def demos(cpu_run, harbor_fixture, tmp_path_factory):
    """Evaluation runs beside the shared CPU run (same output root): scripted CSV attempts, the
    Harbor fixture's oracle, and a scripted solution of that fixture."""
    root = cpu_run["dir"].parent
    script = tmp_path_factory.mktemp("scripts") / "script.json"
    script.write_text(json.dumps({CSV_TASK: [HONEST, FORGED, NOTHING], "count-lines": [COUNT_LINES]}))
    common = [f"run.output_root={root}", "concurrency=3"]
    app(
        "terminal_rl.evaluate",
        "policy=scripted",
        f"policy.script={script}",
        "attempts=3",
        f"task_ids=[{CSV_TASK}]",
        "run.id=demos",
        *common,
    )
    harbor = ["task_set.format=harbor", f"task_set.path={harbor_fixture.parent}"]
    app("terminal_rl.evaluate", "policy=scripted", f"policy.script={script}", *harbor, "run.id=demos", *common)
    app("terminal_rl.evaluate", "policy=oracle", *harbor, "run.id=oracle", *common)
    return root


def step_scores(body):
    """A step-rubric judge: 1 for every step of an episode that rewrote the input, 4 otherwise."""
    trajectory = next(m["content"] for m in body["messages"] if m["role"] == "user")
    score = 1 if "printf" in trajectory else 4
    return json.dumps(
        {
            "steps": [
                {"step": i + 1, "score": score, "reason": "scripted"} for i in range(trajectory.count("\n### Turn "))
            ]
        }
    )


@pytest.fixture(scope="module")
def datasets(demos, cpu_run):
    model = cpu_run["dir"].parent / "models" / "tiny-qwen3"
    with FakeLLMServer(step_scores) as judge:
        result = app(
            "terminal_rl.datasets",
            "command=build",
            "runs=[demos,oracle,ci]",
            f"run.output_root={demos}",
            "run.id=demos",
            f"tokenizer={model}",
            "prm.enabled=true",
            "judge.model=openai/test-judge",
            f"judge.base_url={judge.base_url}",
            "judge.api_key_env=",
        )
    return demos / "demos" / "datasets", result


def test_the_forged_episode_is_removed_with_its_reason(datasets):
    out, result = datasets
    [removed] = [json.loads(line) for line in (out / "removed.jsonl").read_text().splitlines()]
    assert removed["task_id"] == CSV_TASK and removed["files"] == ["/app/data.csv"] and removed["score"] == 1.0
    assert "rewrote or deleted inputs the image or the start files provided" in removed["reason"]
    sft = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    by_task = {row["task_id"]: row for row in sft}
    assert sorted(by_task) == ["count-lines", CSV_TASK], "one best passing episode per task, oracles excluded"
    assert by_task[CSV_TASK]["episode_id"] != removed["episode_id"]
    [pair] = [json.loads(line) for line in (out / "dpo.jsonl").read_text().splitlines()]
    assert pair["chosen_meta"]["episode_id"] == by_task[CSV_TASK]["episode_id"] and pair["rejected_meta"]["score"] < 0.3
    prm = [json.loads(line) for line in (out / "prm.jsonl").read_text().splitlines()]
    forged_steps = [r for r in prm if r["episode_id"] == removed["episode_id"]]
    assert [(r["step_index"], r["step_score"]) for r in forged_steps] == [(1, 1), (2, 1), (3, 1)]
    assert forged_steps[2]["prefix"] == [r["action"] for r in forged_steps[:2]]
    assert "Provider List" not in result.stdout + result.stderr, "litellm's banners stay off the console"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["by_origin"]["rollout"] > 0 and summary["removed"] == 1 and summary["prm_failures"] == {}
    assert summary["prm_usage"]["requests"] == len({r["episode_id"] for r in prm})
    assert "1 forged-fixture episodes removed" in result.stdout
    # The parquet files load with the schema the card describes.
    assert pq.read_table(out / "sft.parquet").column_names[:3] == ["episode_id", "task_id", "content_hash"]


def test_rollout_records_carry_the_ids_the_agent_loop_trained(cpu_run, datasets, tmp_path):
    """With every rollout admitted (min score 0), each SFT record of a training episode is exactly the
    stream the agent loop returned to verl for it."""
    out, _ = datasets
    model = cpu_run["dir"].parent / "models" / "tiny-qwen3"
    app(
        "terminal_rl.datasets",
        "command=build",
        "runs=[ci]",
        f"run.output_root={cpu_run['dir'].parent}",
        "run.id=ci",
        f"tokenizer={model}",
        "sft.min_score=0",
        f"output_dir={tmp_path}",
    )
    records = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in records} <= set(SMOKE_TASKS) and records
    logs = {}
    for path in (cpu_run["dir"] / "logs" / "rollouts").glob("*.jsonl"):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            logs[f"ci/logs/rollouts/{path.name}#{number}"] = json.loads(line)
    for record in records:
        stored = logs[record["episode_id"]]["metadata"]["samples"][record["sample"]]
        assert record["input_ids"] == stored["prompt_ids"] + stored["response_ids"]
        assert record["loss_mask"] == [0] * len(stored["prompt_ids"]) + stored["response_mask"]


@pytest.fixture(scope="module")
def sft(datasets, demos):
    result = app(
        "terminal_rl.sft",
        "run.id=demos",
        f"run.output_root={demos}",
        "verl.data.train_batch_size=2",
        "verl.trainer.total_epochs=4",
    )
    return demos / "demos" / "sft", result


def test_sft_through_verl_lowers_the_loss_and_saves_a_hugging_face_model(sft):
    out, result = sft
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [s["data"]["train/loss"] for s in steps if "train/loss" in s["data"]]
    assert len(losses) == 4 and losses[-1] < losses[0], losses
    assert (out / "model" / "config.json").is_file() and (out / "model" / "model.safetensors").is_file()
    assert (out / "model" / "tokenizer_config.json").is_file(), "the tokenizer travels with the model"
    assert "sft step 1: loss" in result.stdout and "SFT done: 4 steps" in result.stdout
    assert f"model.path={out / 'model'}" in result.stdout
    assert "TrainedTokensDataset" not in result.stdout + result.stderr, "verl's config dump is in train.log"
    assert "TrainedTokensDataset" in (out / "train.log").read_text()


@pytest.fixture(scope="module")
def lora_sft(datasets, demos):
    """SFT of the same records with LoRA (rank 8), in a run of its own."""
    records = demos / "demos" / "datasets" / "sft.parquet"
    app(
        "terminal_rl.sft",
        "run.id=lora",
        f"run.output_root={demos}",
        f"verl.data.train_files=[{records}]",
        "model.lora.rank=8",
        "verl.data.train_batch_size=2",
        "verl.trainer.total_epochs=2",
    )
    return demos / "lora" / "sft"


def test_a_lora_sft_model_is_merged_into_plain_weights_as_peft_computes_them(lora_sft, cpu_run):
    import torch
    from peft import PeftModel
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM

    model_dir = lora_sft / "model"
    merged, info = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, output_loading_info=True)
    assert not any(info.values()), f"every weight loads under its Hugging Face name: {info}"
    # The base LoRA trained on (frozen: the tiny model, in the bf16 verl saves), with the adapter applied
    # by peft itself, un-merged.
    base = AutoModelForCausalLM.from_pretrained(
        cpu_run["dir"].parent / "models" / "tiny-qwen3", torch_dtype=torch.bfloat16
    ).float()
    with safe_open(str(model_dir / "lora_adapter" / "adapter_model.safetensors"), "pt") as adapter:
        assert any(adapter.get_tensor(k).abs().sum() > 0 for k in adapter.keys() if "lora_B" in k), "B trained"
    reference = PeftModel.from_pretrained(base, model_dir / "lora_adapter")
    ids = torch.tensor([[151644, 872, 198, 3838, 374, 220, 17, 10, 17, 30]])
    with torch.no_grad():
        expected, got = reference(ids).logits, merged(ids).logits
    assert (got - expected).abs().max() <= 2e-2 * expected.abs().max(), "equal up to bf16 rounding of the merge"
    unmerged = AutoModelForCausalLM.from_pretrained(cpu_run["dir"].parent / "models" / "tiny-qwen3")
    assert not torch.equal(
        merged.model.layers[0].self_attn.q_proj.weight,
        unmerged.model.layers[0].self_attn.q_proj.weight.bfloat16().float(),
    ), "the adapter is in the weights"


def test_export_writes_the_sft_checkpoint_merged(lora_sft):
    import torch
    from transformers import AutoModelForCausalLM

    result = app("terminal_rl.export", "run.id=lora", f"run.output_root={lora_sft.parent.parent}", "source=sft")
    exported = lora_sft / "hf" / "global_step_2"
    assert f"exported step 2 of run lora to {exported}" in result.stdout
    a, b = (AutoModelForCausalLM.from_pretrained(folder) for folder in (exported, lora_sft / "model"))
    assert all(torch.equal(w, b.state_dict()[name]) for name, w in a.state_dict().items())


def test_the_sft_model_is_evaluated_through_the_cpu_server(sft, demos):
    out, _ = sft
    result = app(
        "terminal_rl.evaluate",
        "policy=token",
        "serve=hf",
        f"serve.model={out / 'model'}",
        "policy.temperature=0",
        "policy.enable_thinking=false",
        "task_set=tbrl_smoke",
        f"task_ids=[{CSV_TASK}]",
        "agent.max_turns=2",
        "agent.max_tokens_per_turn=24",
        "run.id=eval_sft",
        f"run.output_root={demos}",
    )
    [trajectory] = [
        json.loads(line) for line in (demos / "eval_sft" / "eval" / "results.jsonl").read_text().splitlines()
    ]
    assert trajectory["policy"] == "token:policy" and trajectory["turns"], trajectory["termination_detail"]
    assert trajectory["termination"] in ("max_turns", "parse_errors", "finished"), trajectory["termination_detail"]
    assert all(turn["completion_tokens"] for turn in trajectory["turns"]), "the model wrote every turn"
    assert f"serving {out / 'model'}" in result.stdout
