from terminal_rl.filtering.periodic import PassRateTracker
from terminal_rl.filtering.variance import filter_signal, group_variances


def test_online_variance_follows_the_reward_in_use_and_bounds_refills():
    # Tests never vary but the judge does: while the judge weighs, the group carries signal.
    assert filter_signal([0.2, 0.3], [0.0, 0.0], judge_weight=0.35, refills_used=0, max_refills=2) == ([0.0, 1.0], False)
    # Once the judge weight is 0, the test score decides: no variance -> dropped (constant signal).
    assert filter_signal([0.2, 0.3], [0.0, 0.0], judge_weight=0.0, refills_used=0, max_refills=2) == ([0.0, 0.0], True)
    # Refills spent: zero-variance groups are kept so the step finishes.
    assert filter_signal([0.0, 0.0], [0.0, 0.0], judge_weight=0.0, refills_used=2, max_refills=2) == ([0.0, 1.0], False)
    assert group_variances([0.0, 1.0], [1.0, 1.0]) == (0.25, 0.0)


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
