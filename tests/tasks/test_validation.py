from dataclasses import replace

import pytest

from terminal_rl.tasks.model import Difficulty, Environment, Task, VerifierKind
from terminal_rl.tasks.pytest_source import collect_test_names, effective_weights
from terminal_rl.tasks.validation import task_problems

SOURCE = """
def test_a():
    pass

async def test_b():
    pass

def helper():
    pass

class TestGroup:
    def test_c(self):
        pass

class Helper:
    def test_not_collected(self):
        pass
"""


@pytest.fixture
def task(default_limits) -> Task:
    return Task(
        id="t1",
        title="T",
        prompt="do it",
        difficulty=Difficulty.EASY,
        category="c",
        tags=(),
        environment=Environment(dockerfile="# base\nFROM debian:bookworm\nRUN true\n"),
        tests={"test_outputs.py": SOURCE},
        verifier=VerifierKind.WEIGHTED_PYTEST,
        test_weights={"test_a": 0.5, "test_b": 0.25, "TestGroup::test_c": 0.25},
        files={"/etc/motd": b"hi", "notes/readme.txt": b"x"},
        limits=default_limits,
        source="test",
    )


def messages(task):
    return [f"{p.field}: {p.message}" for p in task_problems(task)]


def test_valid_task_has_no_problems(task):
    assert messages(task) == []


def test_collects_functions_and_test_class_methods():
    names, errors = collect_test_names({"test_outputs.py": SOURCE, "data.json": "{"})
    assert names == {"test_a", "test_b", "TestGroup::test_c"}
    assert errors == []


def test_syntax_error_in_tests_is_reported(task):
    broken = replace(task, tests={"test_outputs.py": "def test_a(:\n"})
    assert messages(broken) == ["tests: cannot parse test source: test_outputs.py line 1: invalid syntax"]


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        (
            {"test_a": 0.5, "test_b": 0.25, "TestGroup::test_c": 0.2},
            ["test_weights: weights sum to 0.95, must sum to 1 (±1e-06)"],
        ),
        (
            {"test_a": 1.25, "test_b": -0.25, "TestGroup::test_c": 0.0},
            ["test_weights: weight of 'test_b' is -0.25, must be >= 0"],
        ),
        (
            {"test_a": "0.5", "test_b": 0.25, "TestGroup::test_c": 0.25},
            ["test_weights: weight of 'test_a' is '0.5', not a finite number"],
        ),
        (
            {"test_a": 0.5, "test_b": 0.5},
            [
                "test_weights: test functions ['TestGroup::test_c'] have no weight; give every test a weight or "
                "omit weights"
            ],
        ),
    ],
)
def test_weight_problems(task, weights, expected):
    assert messages(replace(task, test_weights=weights)) == expected


def test_absent_weights_mean_equal_weights(task):
    unweighted = replace(task, test_weights=None)
    assert messages(unweighted) == []
    assert effective_weights(unweighted) == pytest.approx(
        {"TestGroup::test_c": 1 / 3, "test_a": 1 / 3, "test_b": 1 / 3}
    )


def test_weights_within_tolerance_pass(task):
    assert (
        messages(replace(task, test_weights={"test_a": 0.3333333, "test_b": 0.3333333, "TestGroup::test_c": 0.3333334}))
        == []
    )


def test_environment_and_path_problems(task):
    no_from = replace(
        task, environment=Environment(dockerfile="RUN echo hi\n", build_context={"/abs": b"", "a/../../b": b""})
    )
    assert messages(no_from) == [
        "environment.dockerfile: has no FROM line",
        "environment.build_context: path '/abs' must be a non-empty relative path",
        "environment.build_context: path 'a/../../b' escapes its folder with '..'",
    ]
    assert messages(replace(task, environment=Environment())) == ["environment: needs a Dockerfile or an image name"]
    assert messages(replace(task, environment=Environment(image="debian:bookworm"))) == []


def test_harbor_tasks_need_test_sh(task):
    harbor = replace(task, verifier=VerifierKind.HARBOR, test_weights=None)
    assert messages(harbor) == ["tests: Harbor tasks need tests/test.sh"]


def test_limits_normalise_numbers_and_reject_nonsense(default_limits):
    assert replace(default_limits, cpus=2).cpus == 2.0 and isinstance(replace(default_limits, cpus=2).cpus, float)
    with pytest.raises(ValueError, match=r"limits.memory_mb=0 must be a positive number"):
        replace(default_limits, memory_mb=0)
    with pytest.raises(ValueError, match=r"limits.network='yes' must be true or false"):
        replace(default_limits, network="yes")
