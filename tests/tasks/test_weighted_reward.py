import pytest

from terminal_rl.tasks.weighted_reward import junit_outcomes, weighted_score

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite name="pytest">
  <testcase classname="test_outputs" name="test_pass"/>
  <testcase classname="test_outputs" name="test_fail"><failure message="assert 0"/></testcase>
  <testcase classname="test_outputs" name="test_skip"><skipped message="skip"/></testcase>
  <testcase classname="test_outputs" name="test_xfail"><skipped type="pytest.xfail" message="xfail"/></testcase>
  <testcase classname="test_outputs" name="test_error"><error message="fixture"/></testcase>
  <testcase classname="test_outputs.TestGroup" name="test_method"/>
  <testcase classname="test_outputs" name="test_param[1]"/>
  <testcase classname="test_outputs" name="test_param[2]"><failure/></testcase>
  <testcase classname="test_outputs" name="test_teardown"/>
  <testcase classname="test_outputs" name="test_teardown"><error message="teardown"/></testcase>
</testsuite></testsuites>"""


def test_outcomes_count_skip_xfail_and_error_as_not_passed():
    assert junit_outcomes(JUNIT) == {
        "test_pass": "passed",
        "test_fail": "failed",
        "test_skip": "skipped",
        "test_xfail": "skipped",
        "test_error": "error",
        "TestGroup::test_method": "passed",
        "test_param[1]": "passed",
        "test_param[2]": "failed",
        "test_teardown": "error",
    }


@pytest.mark.parametrize(
    ("weights", "score"),
    [
        ({"test_pass": 0.5, "TestGroup::test_method": 0.5}, 1.0),
        ({"test_pass": 0.2, "test_fail": 0.2, "test_skip": 0.2, "test_xfail": 0.2, "test_error": 0.2}, 0.2),
        ({"test_pass": 0.5, "test_param": 0.5}, 0.5),  # a parametrised test passes only if every case does
        ({"test_pass": 0.5, "test_missing": 0.5}, 0.5),  # missing from the report: not passed
        ({"test_teardown": 1.0}, 0.0),
    ],
)
def test_weighted_score(weights, score):
    assert weighted_score(junit_outcomes(JUNIT), weights) == pytest.approx(score)
