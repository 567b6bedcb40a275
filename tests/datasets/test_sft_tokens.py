"""An SFT sample is, token for token, the stream the RL agent loop trained for the same episode: verl's
agent-loop machinery runs our TerminalAgentLoop on a scripted episode (tests/training/
test_token_fidelity.py), the episode's record goes through `terminal_rl.datasets` (both ways: the
stored ids, and re-rendered from its messages as a text policy's episode is), and verl's own SFT
dataset factory (`verl.trainer.sft_trainer.create_sft_dataset` with our `data.custom_cls`) returns
what the agent loop returned to verl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from terminal_rl.agent.tokens import ChatTokenizer
from terminal_rl.datasets.records import sft_records
from terminal_rl.datasets.sources import run_episodes
from terminal_rl.datasets.writer import write_dataset
from tests.training.test_token_fidelity import run_verl_loop

pytestmark = [pytest.mark.docker, pytest.mark.verl]

# Every turn ends with the end-of-turn token (a turn cut by the token cap has none, and the text it
# left cannot say so: such an episode's record must come from its stored ids).
TURNS = [
    "<bash>\ncmd: 'ls /app && cat /app/data.csv'\n</bash>",
    "<think>\nWrite it.\n</think>\n\n<write_file>\nfile_path: /app/parser.py\ncontent: |\n  print(425)\n</write_file>",
    "<finish>\nmessage: done — ünïcode ✓\n</finish>",
]


def verl_sft_items(parquet: Path, tokenizer) -> list[dict]:
    from verl.trainer.sft_trainer import create_sft_dataset

    config = OmegaConf.create(
        {
            "custom_cls": {"path": "pkg://terminal_rl.integrations.verl.sft_dataset", "name": "TrainedTokensDataset"},
            "pad_mode": "no_padding",
            "max_length": 32768,
        }
    )
    dataset = create_sft_dataset([str(parquet)], config, tokenizer, None)
    return [{key: value.tolist() for key, value in dataset[i].items()} for i in range(len(dataset))]


@pytest.mark.parametrize("history", ["append", "per_turn"])
def test_an_sft_sample_is_the_rl_stream_of_its_episode(tmp_path, tokenizer, history):
    turns = [tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id] for text in TURNS]
    outputs, _, _, _ = run_verl_loop(tmp_path, tokenizer, history, True, turns=turns)
    [episode] = run_episodes(tmp_path / next(p.name for p in tmp_path.iterdir() if (p / "logs").is_dir()))
    chat = ChatTokenizer(tokenizer, True)
    stored = sft_records(episode, chat, history)
    episode.trajectory.metadata.pop("samples")
    rendered = sft_records(episode, chat, history)
    rl = [
        {"input_ids": o.prompt_ids + o.response_ids, "loss_mask": [0] * len(o.prompt_ids) + o.response_mask}
        for o in outputs
    ]
    assert len(rl) == (1 if history == "append" else len(TURNS))
    for records in (stored, rendered):
        assert [{"input_ids": r["input_ids"], "loss_mask": r["loss_mask"]} for r in records] == rl
    write_dataset(tmp_path / "ds", "sft", stored, "test", "all", ["t"], {})
    items = verl_sft_items(tmp_path / "ds" / "sft.parquet", tokenizer)
    assert [{"input_ids": i["input_ids"], "loss_mask": i["loss_mask"]} for i in items] == rl
    assert all(i["position_ids"] == list(range(len(i["input_ids"]))) for i in items)
    assert json.loads(json.dumps(stored[0]["messages"])) == episode.trajectory.messages


def test_verl_refuses_records_it_would_have_to_cut_or_pad(tmp_path, tokenizer):
    from verl.trainer.sft_trainer import create_sft_dataset

    record = {"episode_id": "r/x#1", "sample": 0, "input_ids": [1, 2, 3, 4], "loss_mask": [0, 0, 1, 1]}
    write_dataset(tmp_path, "sft", [record], "test", "all", ["t"], {})
    base = {"custom_cls": {"path": "pkg://terminal_rl.integrations.verl.sft_dataset", "name": "TrainedTokensDataset"}}
    with pytest.raises(ValueError, match="r/x#1 sample 0: 4 tokens exceed data.max_length=3"):
        create_sft_dataset(
            [str(tmp_path / "sft.parquet")],
            OmegaConf.create({**base, "pad_mode": "no_padding", "max_length": 3}),
            tokenizer,
            None,
        )
    with pytest.raises(ValueError, match="set data.pad_mode=no_padding"):
        create_sft_dataset(
            [str(tmp_path / "sft.parquet")],
            OmegaConf.create({**base, "pad_mode": "right", "max_length": 8}),
            tokenizer,
            None,
        )
