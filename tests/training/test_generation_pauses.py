"""The record of generation pauses (async training), which episode budgets and group barriers leave out."""

from terminal_rl.training.generation_pauses import GenerationPauses


def test_paused_time_is_the_overlap_with_each_pause():
    pauses = GenerationPauses()
    pauses.pause(10.0)
    pauses.pause(11.0)  # already paused: the first start stands
    pauses.resume(14.0)
    pauses.resume(15.0)  # not paused: nothing to end
    pauses.pause(20.0)
    assert pauses.paused_between(0.0, 9.0) == 0.0
    assert pauses.paused_between(12.0, 30.0) == 2.0 + 10.0, "the open pause runs to the span's end"
    assert pauses.paused_between(0.0, 21.5) == 4.0 + 1.5
    pauses.resume(25.0)
    assert pauses.paused_between(0.0, 100.0) == 9.0
