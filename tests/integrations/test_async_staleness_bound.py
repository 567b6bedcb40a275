"""``rollouts=async``'s staleness bound, as verl's own replay buffer applies it to our composed config.

verl's ``ReplayBufferAsync`` (verl/trainer/ppo/v1/replay_buffer.py l. 514-608) decides which groups a
step trains on: ``stale: wait`` holds sampling while a group in flight has reached the bound
(l. 547-555), ``stale: drop`` evicts a finished group past it and asks for a replacement (l. 520-529,
578-586). The buffer is verl's; only TransferQueue's key-value store is an in-process stand-in, with
the tags verl writes (a prompt key's ``is_prompt``, ``global_steps``, ``status``; a trajectory key
``<uid>_<n>``)."""

from types import SimpleNamespace

import pytest

from tests.training.conftest import train_config

replay_buffer = pytest.importorskip("verl.trainer.ppo.v1.replay_buffer")

MAX_STALENESS = 2


class FakeTransferQueue:
    """TransferQueue's ``kv_list``/``kv_clear`` over one dict; ``on_poll`` runs at each listing after
    the first (a group finishing while the trainer waits). Group ids have no ``_``: verl reads a
    trajectory key's group as the text before its first ``_``."""

    def __init__(self, groups: dict[str, tuple[int, str]], on_poll=None):
        self.train = {}
        for uid, (issued_at, status) in groups.items():
            self.train[uid] = {"is_prompt": True, "global_steps": issued_at, "status": status}
            if status == "finished":
                self.train[f"{uid}_0"] = {"global_steps": issued_at}
        self.on_poll, self.listings = on_poll, 0

    def kv_list(self):
        if self.listings and self.on_poll:
            self.on_poll(self)
        self.listings += 1
        return {"train": dict(self.train)}

    def kv_clear(self, partition_id, keys):
        for key in keys:
            self.train.pop(key, None)


def buffer(monkeypatch, stale: str, store: FakeTransferQueue, refills: list[int]):
    cfg = train_config(
        "hardware=cpu",
        "rollouts=async",
        f"async_rollouts.max_staleness={MAX_STALENESS}",
        f"async_rollouts.stale={stale}",
    )
    sampler = cfg.trainer.v1.sampler
    monkeypatch.setattr(replay_buffer, "tq", SimpleNamespace(kv_list=store.kv_list, kv_clear=store.kv_clear))
    return replay_buffer.ReplayBufferAsync(
        trainer_mode=cfg.trainer.v1.trainer_mode,
        trainer_config=cfg.trainer,
        max_off_policy_threshold=sampler.max_off_policy_threshold,
        max_off_policy_strategy=sampler.max_off_policy_strategy,
        sampler_kwargs={},
        poll_interval=0.001,
        refill_fn=refills.append,
    )


def trained(batch) -> set[str]:
    return {key.split("_")[0] for key in batch.keys}


def test_wait_holds_the_step_until_a_group_at_the_bound_finishes_then_trains_it(monkeypatch):
    """Step 3 with a group issued at step 1 still running (2 steps stale): verl does not sample the
    finished group beside it, waits for the old one and trains it. Nothing is dropped."""

    def finish_old(store):
        if store.listings == 3:
            store.train["old"]["status"] = "finished"
            store.train["old_0"] = {"global_steps": 1}

    store = FakeTransferQueue({"old": (1, "running"), "new": (3, "finished")}, on_poll=finish_old)
    refills = []
    batch, _ = buffer(monkeypatch, "wait", store, refills).sample(global_steps=3, partition_id="train", batch_size=1)
    assert trained(batch) == {"old"} and store.listings >= 4, "waited for the group at the bound, then trained it"
    assert refills == [] and "new" in store.train, "nothing dropped; the younger group stays for the next step"


def test_wait_does_not_hold_a_step_for_a_group_inside_the_bound(monkeypatch):
    store = FakeTransferQueue({"young": (2, "running"), "new": (3, "finished")})
    batch, _ = buffer(monkeypatch, "wait", store, []).sample(global_steps=3, partition_id="train", batch_size=1)
    assert trained(batch) == {"new"} and store.listings == 1


def test_wait_trains_a_group_that_finished_beside_a_full_batch_one_step_past_the_bound(monkeypatch):
    """The limit docs/training.md states: verl holds back only groups in flight, so of two finished
    groups issued at step 1, the one left out of step 3's batch is trained at step 4, 3 steps stale."""
    store = FakeTransferQueue({"first": (1, "finished"), "second": (1, "finished")})
    sampler = buffer(monkeypatch, "wait", store, [])
    at_bound = trained(sampler.sample(global_steps=3, partition_id="train", batch_size=1)[0])
    batch, metrics = sampler.sample(global_steps=4, partition_id="train", batch_size=1)
    assert len(at_bound) == len(trained(batch)) == 1 and at_bound | trained(batch) == {"first", "second"}
    assert "training/off_policy/evicted_samples" not in metrics, "trained, not dropped"


def test_drop_replaces_a_finished_group_past_the_bound_and_trains_one_at_it(monkeypatch):
    """At step 4 a group issued at step 1 (3 steps stale) is dropped and one replacement asked for; the
    group issued at step 2 (2 steps stale, the bound) is trained."""
    store = FakeTransferQueue({"past": (1, "finished"), "atbound": (2, "finished"), "new": (4, "finished")})
    refills = []
    batch, metrics = buffer(monkeypatch, "drop", store, refills).sample(
        global_steps=4, partition_id="train", batch_size=1
    )
    assert trained(batch) == {"atbound"}
    assert refills == [1] and "past" not in store.train and "past_0" not in store.train
    assert metrics["training/off_policy/evicted_samples"] == 1, metrics
    # verl counts staleness in versions spanned (issue step to training step inclusive): 4 - 1 + 1.
    assert metrics["training/off_policy/evicted_samples_staleness/max"] == MAX_STALENESS + 2
