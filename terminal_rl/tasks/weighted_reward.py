"""Weighted pytest partial credit: score = sum of the weights of the tests that PASSED.

Standard library only: the Harbor exporter copies this file next to a task's tests, where it runs
inside the task's container as ``python3 weighted_reward.py JUNIT_XML WEIGHTS_JSON``. SKIPPED,
XFAIL, ERROR, FAILED and tests missing from the report all count as not passed (Terminal-Bench 1's
parser counted SKIPPED and XFAIL as passed).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree

PASSED = "passed"


def junit_outcomes(junit_xml: str) -> dict[str, str]:
    """Test name ("test_x" or "TestClass::test_x") -> passed|failed|error|skipped from JUnit XML."""
    outcomes: dict[str, str] = {}
    for case in ElementTree.fromstring(junit_xml).iter("testcase"):
        classname = case.get("classname", "")
        owner = classname.rsplit(".", 1)[-1]
        name = case.get("name", "")
        key = f"{owner}::{name}" if owner.startswith("Test") else name
        outcome = PASSED
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                break
        # A test that fails in teardown after passing appears twice; the worse outcome wins.
        if outcomes.get(key, PASSED) == PASSED:
            outcomes[key] = outcome
    return outcomes


def weighted_score(outcomes: dict[str, str], weights: dict[str, float]) -> float:
    """Sum of weights of PASSED tests; parametrised cases ("test_x[1]") must all pass."""
    score = 0.0
    for name, weight in weights.items():
        cases = [o for test, o in outcomes.items() if test == name or test.startswith(name + "[")]
        if cases and all(o == PASSED for o in cases):
            score += weight
    return score


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: weighted_reward.py JUNIT_XML WEIGHTS_JSON", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            outcomes = junit_outcomes(handle.read())
    except (OSError, ElementTree.ParseError) as error:
        print(f"no usable pytest report ({error}); score 0", file=sys.stderr)
        outcomes = {}
    with open(argv[2], encoding="utf-8") as handle:
        weights = json.load(handle)
    print(f"{weighted_score(outcomes, weights):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
