"""verl's SFT dataset hook (``data.custom_cls``) over our SFT records: the token ids and loss masks
stored when the episode was trained or rendered, never re-tokenised.

verl's own ``MultiTurnSFTDataset`` tokenises each message on its own and asserts the concatenation
equals the whole conversation's rendering, which Qwen3's template breaks (earlier turns lose their
think block); our records carry the training stream instead (``terminal_rl/datasets/records.py``).
One record is one sequence (no packing). Items follow verl's ``no_padding`` layout
(``verl/utils/dataset/multiturn_sft_dataset.py``, ``__getitem__``): 1-D ``input_ids``, ``position_ids``
(0..n-1) and ``loss_mask`` aligned with the tokens; verl's ``sft_loss`` shifts the mask by one to the
log-probabilities (``verl/workers/utils/losses.py``).
"""

from __future__ import annotations

import pyarrow.parquet as pq
import torch
from torch.utils.data import Dataset


class TrainedTokensDataset(Dataset):
    """Rows of ``sft.parquet`` files: ``input_ids`` and ``loss_mask`` (same length, mask 1 on the model's
    own tokens). verl calls it as ``cls(parquet_files=, tokenizer=, config=, processor=, max_samples=)``."""

    def __init__(self, parquet_files, tokenizer, config, processor=None, max_samples: int = -1):
        if config.get("pad_mode") != "no_padding":
            raise ValueError(
                f"data.pad_mode={config.get('pad_mode')!r}: our SFT records train one sequence per "
                "sample without padding; set data.pad_mode=no_padding"
            )
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        self.max_length = int(config.get("max_length"))
        self.samples: list[tuple[list[int], list[int]]] = []
        for path in files:
            table = pq.read_table(path, columns=["episode_id", "sample", "input_ids", "loss_mask"]).to_pylist()
            self.samples += [
                checked_sample(row, f"{path}: episode {row['episode_id']} sample {row['sample']}", self.max_length)
                for row in table
            ]
        if max_samples > 0:
            self.samples = self.samples[:max_samples]
        if not self.samples:
            raise ValueError(f"no SFT samples in {files}")

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        ids, mask = self.samples[index]
        return {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "position_ids": torch.arange(len(ids), dtype=torch.long),
            "loss_mask": torch.tensor(mask, dtype=torch.long),
        }


def checked_sample(row: dict, where: str, max_length: int) -> tuple[list[int], list[int]]:
    """A record's (input_ids, loss_mask), refused with ``where`` named when they cannot be trained as
    they are (lengths differ, nothing to learn, the first token masked in, longer than ``max_length``)."""
    ids, mask = row["input_ids"], row["loss_mask"]
    if len(ids) != len(mask):
        raise ValueError(f"{where}: input_ids has {len(ids)} tokens but loss_mask {len(mask)}")
    if not any(mask) or mask[0]:
        raise ValueError(f"{where}: the loss mask must cover some model tokens and not the first token")
    if len(ids) > max_length:
        raise ValueError(
            f"{where}: {len(ids)} tokens exceed data.max_length={max_length} (raise it; a trajectory is never "
            "cut or packed)"
        )
    return ids, mask
