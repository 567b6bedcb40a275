"""The forged-fixture guard's rule and modes on verification records (pure)."""

import pytest

from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.rewards.components import all_components
from terminal_rl.rewards.fixture_guard import FixtureGuard, forged_inputs, verdict

FORGED = {
    "score": 1.0,
    "task_reward": 1.0,
    "reads": ["/app/expected.txt", "/app/out.txt"],
    "changes": {"/app/expected.txt": "modified", "/app/out.txt": "added"},
    "start_files_changed": [],
}


def test_a_rewritten_input_the_tests_read_is_forged_unless_the_reference_changes_it_too():
    assert forged_inputs(FORGED, None) == ["/app/expected.txt"], "a file it added (out.txt) is its work"
    assert forged_inputs(FORGED, ["/app/expected.txt"]) == [], "the reference rewrites it too: intended"
    assert forged_inputs({**FORGED, "reads": ["/app/out.txt"]}, None) == [], "the tests never read it"
    started = {**FORGED, "changes": {}, "start_files_changed": ["/app/data.csv"], "reads": ["/app/data.csv"]}
    assert forged_inputs(started, []) == ["/app/data.csv"], "a start file rewritten counts as the image's"
    deleted = {**FORGED, "changes": {"/app/expected.txt": "deleted"}}
    assert forged_inputs(deleted, []) == ["/app/expected.txt"]


def test_zero_mode_zeroes_test_rewards_only_where_the_reference_is_known():
    known, unknown = {**FORGED, "reference_changes": ["/app/out.txt"]}, {**FORGED, "reference_changes": None}
    assert verdict(known, FixtureGuard.ZERO) == (["/app/expected.txt"], True)
    assert verdict(unknown, FixtureGuard.ZERO) == (["/app/expected.txt"], False), "no reference: flagged only"
    assert verdict(known, FixtureGuard.FLAG) == (["/app/expected.txt"], False)
    assert verdict(known, FixtureGuard.OFF) == ([], False)
    components = all_components(Trajectory("t", "h", "p", "x", verification=known), None, 10, FixtureGuard.ZERO)
    assert components["tests"].score == components["task_reward"].score == 0.0
    assert components["tests"].details["forged"] == ["/app/expected.txt"] and components["tests"].details["zeroed"]
    flagged = all_components(Trajectory("t", "h", "p", "x", verification=unknown), None, 10, FixtureGuard.ZERO)
    assert flagged["tests"].score == 1.0 and flagged["tests"].details["zeroed"] is False
    honest = {**known, "changes": {"/app/out.txt": "added"}}
    clean = all_components(Trajectory("t", "h", "p", "x", verification=honest), None, 10, FixtureGuard.ZERO)
    assert clean["tests"].score == 1.0 and "forged" not in clean["tests"].details


def test_the_mode_reads_yamls_bare_off_and_names_the_choices_otherwise():
    assert FixtureGuard.of(False) is FixtureGuard.OFF and FixtureGuard.of("zero") is FixtureGuard.ZERO
    with pytest.raises(ValueError, match=r"fixture_guard='sometimes' is not one of \['off', 'flag', 'zero'\]"):
        FixtureGuard.of("sometimes")
