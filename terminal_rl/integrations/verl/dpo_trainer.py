"""DPO on verl's own SFT trainer (``verl.trainer.sft_trainer.SFTTrainer``), started under torchrun as
``python -m terminal_rl.integrations.verl.dpo_trainer --config-path=DIR --config-name=NAME``.

Why verl's SFT trainer and not TRL's ``DPOTrainer``: TRL 1.16 re-tokenises each pair from its
messages through the chat template (``trl/trainer/dpo_trainer.py`` ``_prepare_dataset``, l. 1075-1126)
and puts every completion token in the loss (``DataCollatorForPreference``, l. 146-150), observations
included; our records carry the token ids the RL stream trained and a mask on the model's own tokens,
which verl's SFT trainer takes as they are (the SFT stage's path, ``sft_dataset.py``).

What the subclass adds, through the trainer's own seams (verl 0.9.1, ``verl/trainer/sft_trainer.py``):
- the dataset is ours (``data.custom_cls``: ``dpo_dataset.PreferencePairsDataset``), its batches whole
  pairs (``_build_dataloader``, l. 224-270, rebuilt with ``dpo_dataset.PairBatchSampler``; ``fit`` calls
  the sampler's ``set_epoch``, l. 357; ``_get_batch_seqlens``, l. 272-306, gathers equal-sized tensors
  of lengths, and ranks hold as many pairs but not as many sequences: ours gathers objects);
- the loss is a weighted sum of sequence log-probabilities (``TrainingWorker.set_loss_fn``,
  ``verl/workers/engine_workers.py`` l. 170), whose weights come from a no-grad pass over the step's
  batch (``TrainingWorker.infer_batch``, l. 398) so the sum has DPO's value and gradient
  (``terminal_rl/training/preference.py``) however verl splits the batch into micro-batches;
- before the first step, the same pass over every sequence with the initial weights gives the
  reference log-probabilities (the reference model is the starting model, frozen), as TRL's
  ``precompute_ref_log_probs`` does.
``dpo.beta`` is read from the config's ``dpo`` section. Metrics: verl's ``train/loss`` (the DPO loss),
``dpo/margin`` (mean ``beta * h`` before the step), ``dpo/accuracy`` (pairs ranked right).
"""

from __future__ import annotations

from pathlib import Path

import hydra
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from verl.trainer.sft_trainer import SFTTrainer
from verl.utils import tensordict_utils as tu
from verl.utils.device import auto_set_device
from verl.utils.distributed import destroy_global_process_group, initialize_global_process_group

from terminal_rl.integrations.verl.dpo_dataset import PairBatchSampler, PreferencePairsDataset
from terminal_rl.training.preference import preference_terms

# The reference log-probabilities, in trainer.default_local_dir.
REFERENCE_FILE = "dpo_reference_logps.pt"


def sequence_logps(log_probs: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """[sequences] summed log-probabilities of each sequence's masked tokens. ``log_probs``, ``loss_mask``:
    jagged [sequences, tokens]; verl's log-prob at position i is token i+1's, so the mask is shifted
    left by one (as ``verl/workers/utils/losses.py sft_loss`` does; a sequence's first token is never
    masked in, so nothing crosses into the previous sequence)."""
    mask = torch.roll(loss_mask.values(), shifts=-1, dims=0).to(log_probs.dtype)
    lengths = log_probs.offsets().diff().tolist()
    return torch.stack([chunk.sum() for chunk in torch.split(log_probs.values() * mask, lengths)])


def weighted_logp_loss(model_output, data, dp_group=None):
    """``sum(-weight * logp + offset)`` over the micro-batch's sequences. The weights average over this
    rank's pairs and every rank has as many (``PairBatchSampler``), so FSDP's average of the ranks'
    gradients is the mean over all pairs (verl's ``sft_loss`` instead multiplies by the data-parallel
    size because it divides by the token count of all ranks)."""
    logp = sequence_logps(model_output["log_probs"], data["loss_mask"])
    return (-data["dpo_weight"].to(logp) * logp + data["dpo_offset"].to(logp)).sum(), {}


class _PreferenceClient:
    """verl's ``TrainingWorker`` whose ``train_batch`` first weighs the batch's sequences."""

    def __init__(self, client, dataset: PreferencePairsDataset, beta: float, batching: dict):
        self._client, self._dataset, self._beta = client, dataset, beta
        # How the no-grad pass splits a batch: as the step does (verl's infer defaults are unset in SFT).
        self._batching = batching

    def __getattr__(self, name):
        return getattr(self._client, name)

    def logps(self, data) -> torch.Tensor:
        """The batch's sequence log-probabilities under the current weights (no grad, verl's infer pass)."""
        probe = data.copy()
        tu.assign_non_tensor(probe, compute_loss=False, **self._batching)
        output = self._client.infer_batch(probe)
        return sequence_logps(output["log_probs"], data["loss_mask"]).double().cpu()

    def train_batch(self, data):
        index = data["index"].values().cpu()
        dataset = self._dataset
        terms = preference_terms(
            self.logps(data), dataset.reference[index], dataset.pair_ids[index], dataset.sides[index], self._beta
        )
        data["dpo_weight"], data["dpo_offset"] = terms.weight.float(), terms.offset.float()
        output = self._client.train_batch(data)
        metrics = tu.get(output, "metrics")
        if metrics is not None:
            metrics.update({"dpo/margin": terms.margin, "dpo/accuracy": terms.accuracy})
        return output


class DPOTrainer(SFTTrainer):
    def _build_engine(self):
        super()._build_engine()
        if not isinstance(self.train_dataset, PreferencePairsDataset):
            raise ValueError(
                "DPO needs data.custom_cls = terminal_rl.integrations.verl.dpo_dataset.PreferencePairsDataset"
            )
        data, engine = self.config.data, self.config.engine
        refused = {
            "data.val_files": "validation would score sequences without their pair's weights",
            "data.use_dynamic_bsz=false": "a step's sequence count varies with its pairs (per_turn turns)",
            "engine.ulysses_sequence_parallel_size>1": "every rank must see its sequences' log-probabilities",
        }
        chosen = {
            "data.val_files": bool(data.get("val_files")),
            "data.use_dynamic_bsz=false": not data.use_dynamic_bsz,
            "engine.ulysses_sequence_parallel_size>1": int(engine.get("ulysses_sequence_parallel_size", 1)) > 1,
        }
        problems = [f"{setting} ({why})" for setting, why in refused.items() if chosen[setting]]
        if problems:
            raise ValueError(f"DPO does not support {'; '.join(problems)}")
        self.training_client.set_loss_fn(loss_fn=weighted_logp_loss)
        batching = {
            "use_dynamic_bsz": True,
            "max_token_len_per_gpu": int(data.max_token_len_per_gpu),
            "micro_batch_size_per_gpu": int(data.micro_batch_size_per_gpu),
        }
        self.training_client = _PreferenceClient(
            self.training_client, self.train_dataset, float(self.config.dpo.beta), batching
        )

    def _build_dataloader(self):
        super()._build_dataloader()
        self.train_sampler = PairBatchSampler(
            self.train_dataset.pair,
            int(self.config.data.train_batch_size),
            self.engine.get_data_parallel_rank(),
            self.engine.get_data_parallel_size(),
            seed=int(self.config.trainer.seed),
        )
        self.train_dataloader = StatefulDataLoader(
            dataset=self.train_dataset,
            batch_sampler=self.train_sampler,
            collate_fn=self.collate_fn,
            num_workers=self.config.data.num_workers,
        )

    def _get_batch_seqlens(self, data):
        """Every rank's sequence lengths (for verl's token counts): gathered as objects, since ranks hold
        as many pairs but not as many sequences (``SFTTrainer._get_batch_seqlens`` gathers equal-sized
        tensors)."""
        lengths = data["input_ids"].offsets().diff().tolist()
        group = self.engine.get_data_parallel_group()
        if self.engine.get_data_parallel_size() == 1 or group is None:
            return lengths
        gathered = [None] * self.engine.get_data_parallel_size()
        torch.distributed.all_gather_object(gathered, lengths, group=group)
        return [length for rank in gathered for length in rank]

    def fit(self):
        self.train_dataset.reference = self._reference_logps()
        super().fit()

    def _reference_logps(self) -> torch.Tensor:
        """Every sequence's log-probability under the starting weights, each rank computing its share of
        chunks; kept beside the checkpoints, where a resumed run (its weights trained) reads them back."""
        saved = Path(self.config.trainer.default_local_dir) / REFERENCE_FILE
        if self.resume_global_step > 0:
            if not saved.is_file():
                raise FileNotFoundError(f"resuming at step {self.resume_global_step} without {saved} (the reference)")
            reference = torch.load(saved)
            if len(reference) != len(self.train_dataset):
                raise ValueError(f"{saved} holds {len(reference)} sequences, the data {len(self.train_dataset)}")
            return reference
        dataset, size = self.train_dataset, max(1, int(self.config.data.micro_batch_size_per_gpu))
        chunks = [list(range(start, min(start + size, len(dataset)))) for start in range(0, len(dataset), size)]
        rank, ranks = self.engine.get_data_parallel_rank(), self.engine.get_data_parallel_size()
        meta = {
            "pad_mode": self.config.data.pad_mode,
            "temperature": 1.0,
            "use_remove_padding": self.config.model.use_remove_padding,
        }
        reference = torch.zeros(len(dataset), dtype=torch.float64)
        for first in range(0, len(chunks), ranks):  # every rank calls the engine as often (a collective)
            mine = first + rank
            indices = chunks[mine] if mine < len(chunks) else chunks[0]
            batch = tu.get_tensordict(tensor_dict=self.collate_fn([dataset[i] for i in indices]), non_tensor_dict=meta)
            logps = self.training_client.logps(batch)
            if mine < len(chunks):
                reference[indices] = logps
        group = self.engine.get_data_parallel_group()
        if ranks > 1 and group is not None:  # each rank filled its chunks, zeros elsewhere
            on_device = reference.to(self.device_name)
            torch.distributed.all_reduce(on_device, group=group)
            reference = on_device.cpu()
        if self.rank == 0:
            saved.parent.mkdir(parents=True, exist_ok=True)
            torch.save(reference, saved)
        return reference


@hydra.main(config_path=None, config_name=None, version_base=None)
def main(config):
    auto_set_device(config)
    initialize_global_process_group()
    DPOTrainer(config=config).fit()
    destroy_global_process_group()


if __name__ == "__main__":
    main()
