import json

from terminal_rl.filtering.periodic import PassRateTracker
from terminal_rl.filtering.variance import filter_signal, group_variances, lacks_signal
from terminal_rl.training.step_ledger import GroupRecord, StepLedger


def test_online_variance_follows_the_reward_in_use():
    # Tests never vary but the judge does: while the judge weighs, the group carries signal.
    assert not lacks_signal([0.2, 0.3], [0.0, 0.0], judge_weight=0.35)
    # Once the judge weight is 0, the test score decides: no variance -> no signal.
    assert lacks_signal([0.2, 0.3], [0.0, 0.0], judge_weight=0.0)
    assert not lacks_signal([1.0], [1.0], judge_weight=0.0), "a group of one is never dropped"
    # A dropped group's metric is constant (verl evicts it), a kept group's never is.
    assert filter_signal(2, dropped=True) == [0.0, 0.0] and filter_signal(3, dropped=False) == [0.0, 1.0, 2.0]
    assert group_variances([0.0, 1.0], [1.0, 1.0]) == (0.25, 0.0)


def test_refills_are_bounded_per_step_across_workers():
    """Claims count against the step whose sampling evicts the group: step 7's while it samples; in
    async mode, once step 7 has its batch (the trainer's on_sample_end), step 8's."""
    ledger = StepLedger(max_refills=2)
    ledger.refills_count_for(7)
    # Several workers claim in the same step: only two claims succeed, whoever makes them.
    assert [ledger.claim_refill() for _ in range(4)] == [True, True, False, False]
    ledger.refills_count_for(8)  # step 7 sampled: scored while it trains or as step 8 samples, one budget
    assert [ledger.claim_refill() for _ in range(3)] == [True, True, False], "a new step, new claims"


def test_ledger_gives_each_group_to_the_step_that_consumed_it_filtered_or_not():
    """Keyed by group id: a group counts in the step that trained on it or evicted it, whatever step
    issued it (async mode), and once, even when its prompt was reissued after a resume."""
    ledger = StepLedger(max_refills=1)
    kept, dropped = GroupRecord("a", 0, [1.0, 0.0], False, False), GroupRecord("b", 0, [0.0, 0.0], False, True)
    waiting = GroupRecord("c", 0, [0.0], False, False)
    ledger.record("uid-a", GroupRecord("a", 0, [0.0, 0.0], True, False))
    ledger.record("uid-a", kept)  # reissued after a resume: replaces the first record
    ledger.record("uid-b", dropped)
    ledger.record("uid-c", waiting)
    assert ledger.take_consumed(live_group_ids={"uid-c"}) == [kept, dropped]
    assert ledger.take_consumed(live_group_ids={"uid-c"}) == [], "taken groups are forgotten"
    assert ledger.take_consumed(live_group_ids=set()) == [waiting], "consumed by a later step"


def test_the_ledger_s_unconsumed_groups_survive_a_resume():
    """Saved with the checkpoint; restored in place of what a killed attempt recorded after it."""
    ledger = StepLedger(max_refills=1)
    waiting = GroupRecord("c", 1, [0.5, 1.0], False, False)
    ledger.record("uid-c", waiting)
    saved = json.loads(json.dumps(ledger.state()))
    ledger.record("uid-after-the-checkpoint", GroupRecord("d", 1, [0.0], False, False))
    ledger.restore(saved)
    assert ledger.take_consumed(set()) == [waiting]


def test_periodic_pass_rate_parks_and_readmits():
    tracker = PassRateTracker(min_samples=2, window=4, mastered=0.95, untouchable=0.0, park_steps=3)
    assert tracker.update([("easy", 1.0), ("hard", 0.0), ("mid", 0.5)]) == set()
    assert tracker.update([("easy", 1.0), ("hard", 0.0), ("mid", 1.0)]) == {"easy", "hard"}
    assert tracker.update([("mid", 0.0)]) == {"easy", "hard"}
    tracker.update([])
    assert tracker.update([]) == set(), "re-admitted after park_steps, with a fresh estimate"
    restored = PassRateTracker(2, 4, 0.95, 0.0, 3)
    restored.restore(tracker.state())
    assert restored.state() == tracker.state()
