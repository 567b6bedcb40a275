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
    ledger = StepLedger(max_refills=2)
    # Several workers claim for the same step: only two claims succeed, whoever makes them.
    assert [ledger.claim_refill(7) for _ in range(4)] == [True, True, False, False]
    assert ledger.claim_refill(8) and ledger.refills(7) == 2 and ledger.refills(8) == 1


def test_ledger_keeps_every_group_of_a_step_filtered_or_not():
    ledger = StepLedger(max_refills=1)
    kept, dropped = GroupRecord("a", 0, [1.0, 0.0], False, False), GroupRecord("b", 0, [0.0, 0.0], False, True)
    ledger.record(3, kept)
    ledger.record(3, dropped)
    ledger.record(2, GroupRecord("old", 0, [0.0], False, False))
    assert ledger.take(3) == [kept, dropped]
    assert ledger.take(3) == [] and ledger.take(2) == [], "taken steps and earlier leftovers are forgotten"


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
