"""verl's SFT dataset hook (``data.custom_cls``) over our DPO records, and the sampler that keeps a
pair's sequences in one batch.

A record (``terminal_rl/datasets/records.py dpo_record``) holds the chosen and the rejected episode as
the token ids and loss masks they were trained or rendered with (``chosen_samples`` /
``rejected_samples``: one sequence per episode in ``append`` history, one per turn in ``per_turn``).
Each sequence is one item in verl's ``no_padding`` layout (as ``sft_dataset.py``), plus ``index``, by
which the trainer looks up its pair, its side and its reference log-probability.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import torch
from torch.utils.data import Dataset, Sampler

from terminal_rl.integrations.verl.sft_dataset import checked_sample


class PreferencePairsDataset(Dataset):
    """The sequences of ``dpo.parquet`` files; ``pair[i]`` and ``side[i]`` (+1 chosen, -1 rejected) of
    each (as tensors: ``pair_ids``, ``sides``), and ``reference[i]`` (its summed log-probability under
    the reference model, set by the trainer before the first step). verl calls it as
    ``cls(parquet_files=, tokenizer=, config=, processor=, max_samples=)``; ``max_samples`` counts pairs."""

    def __init__(self, parquet_files, tokenizer, config, processor=None, max_samples: int = -1):
        if config.get("pad_mode") != "no_padding":
            raise ValueError(
                f"data.pad_mode={config.get('pad_mode')!r}: DPO trains our records unpadded; set no_padding"
            )
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        max_length = int(config.get("max_length"))
        self.samples: list[tuple[list[int], list[int]]] = []
        self.pair: list[int] = []
        self.side: list[float] = []
        for path in files:
            for row in pq.read_table(path, columns=["chosen_samples", "rejected_samples", "chosen_meta"]).to_pylist():
                if 0 < max_samples <= self.pairs:
                    break
                where, pair_id = f"{path}: pair of episode {row['chosen_meta']['episode_id']}", self.pairs
                for side, key in ((1.0, "chosen_samples"), (-1.0, "rejected_samples")):
                    if not row[key]:
                        raise ValueError(f"{where}: {key} is empty")
                    for number, sample in enumerate(row[key]):
                        self.samples.append(checked_sample(sample, f"{where} {key}[{number}]", max_length))
                        self.pair.append(pair_id)
                        self.side.append(side)
        if not self.samples:
            raise ValueError(f"no DPO pairs in {files}")
        self.pair_ids = torch.tensor(self.pair)
        self.sides = torch.tensor(self.side, dtype=torch.float64)
        self.reference = torch.zeros(len(self.samples), dtype=torch.float64)

    @property
    def pairs(self) -> int:
        return self.pair[-1] + 1 if self.pair else 0

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        ids, mask = self.samples[index]
        return {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "position_ids": torch.arange(len(ids), dtype=torch.long),
            "loss_mask": torch.tensor(mask, dtype=torch.long),
            "index": torch.tensor([index], dtype=torch.long),
        }


class PairBatchSampler(Sampler[list[int]]):
    """Batches of whole pairs: each step takes ``pairs_per_step`` shuffled pairs (data-parallel ranks
    take every ``dp_size``-th of them) and yields this rank's pairs' sequences, so the trainer sees every
    sequence of a pair in one batch. The last incomplete step of an epoch is dropped (as verl's SFT
    sampler does)."""

    def __init__(self, pair: list[int], pairs_per_step: int, dp_rank: int, dp_size: int, seed: int = 0):
        if pairs_per_step % dp_size:
            raise ValueError(f"data.train_batch_size={pairs_per_step} pairs must divide by the {dp_size} ranks")
        self.sequences: dict[int, list[int]] = {}
        for index, pair_id in enumerate(pair):
            self.sequences.setdefault(pair_id, []).append(index)
        if len(self.sequences) < pairs_per_step:
            raise ValueError(
                f"{len(self.sequences)} DPO pairs are fewer than data.train_batch_size={pairs_per_step} (pairs a step)"
            )
        self.pairs_per_step, self.dp_rank, self.dp_size, self.seed = pairs_per_step, dp_rank, dp_size, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.sequences) // self.pairs_per_step

    def __iter__(self):
        order = torch.randperm(len(self.sequences), generator=torch.Generator().manual_seed(self.seed + self.epoch))
        for step in range(len(self)):
            chosen = order[step * self.pairs_per_step : (step + 1) * self.pairs_per_step][self.dp_rank :: self.dp_size]
            yield [index for pair_id in chosen.tolist() for index in self.sequences[pair_id]]
