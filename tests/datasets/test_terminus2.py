"""Terminus-2 traces (the format of OpenThoughts-Agent-v1-SFT) to SFT records of our terminus_json
protocol, held against Qwen3's chat template: in per_turn mode every sample's prompt is the template's
own rendering of the conversation before that turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from terminal_rl.agent.tokens import ChatTokenizer, bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.datasets.terminus2 import convert

TRACES = Path(__file__).parents[1] / "fixtures" / "terminus2" / "traces.jsonl"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(bundled_qwen3_tokenizer_dir()))


def template(tokenizer, messages):
    return tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, enable_thinking=True, return_dict=False
    )


def test_per_turn_samples_are_the_chat_templates_rendering(tokenizer):
    records, rejected = convert(TRACES, ChatTokenizer(tokenizer, True), "per_turn")
    assert [r["episode_id"] for r in rejected] == ["traces.jsonl#3"] and "assistant turn 1:" in rejected[0]["reason"]
    assert [(r["task_id"], r["sample"]) for r in records] == [
        ("count-notes-lines", 0),
        ("count-notes-lines", 1),
        ("make-ready-file", 0),
    ]
    for record in records:
        messages = record["messages"]
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        before = messages[: turns[record["sample"]]]
        prompt = template(tokenizer, before)
        assert record["input_ids"][: len(prompt)] == prompt and not any(record["loss_mask"][: len(prompt)])
        response = [t for t, m in zip(record["input_ids"], record["loss_mask"]) if m]
        assert tokenizer.decode(response) == messages[turns[record["sample"]]]["content"] + "<|im_end|>"


def test_append_trains_each_trace_once_on_its_model_turns(tokenizer):
    records, _ = convert(TRACES, ChatTokenizer(tokenizer, True), "append")
    assert [r["samples"] for r in records] == [1, 1]
    first = records[0]
    assistant = [m["content"] for m in first["messages"] if m["role"] == "assistant"]
    model = [t for t, m in zip(first["input_ids"], first["loss_mask"]) if m]
    assert tokenizer.decode(model) == "<|im_end|>".join(assistant) + "<|im_end|>"
    prompt = template(tokenizer, first["messages"][:1])
    assert first["input_ids"][: len(prompt)] == prompt


def test_the_convert_command_writes_the_dataset_and_the_rejected_traces(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "terminal_rl.datasets",
            "command=convert",
            f"convert.input={TRACES}",
            f"tokenizer={bundled_qwen3_tokenizer_dir()}",
            f"output_dir={tmp_path}",
            "agent=terminus_json",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3 traces -> 2 SFT records (2 traces); 1 rejected" in result.stdout
    assert (tmp_path / "sft.parquet").is_file() and "terminus_json" in (tmp_path / "sft.md").read_text()
    assert json.loads((tmp_path / "rejected.jsonl").read_text())["episode_id"] == "traces.jsonl#3"
