import csv
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from terminal_rl.tasks.loaders import TaskSourceError
from terminal_rl.tasks.loaders.tbrl_csv import COLUMNS, load_tbrl_csv
from terminal_rl.tasks.model import VerifierKind
from terminal_rl.tasks.validation import validate_tasks


@pytest.fixture(scope="module")
def loaded(tbrl_csv, default_limits):
    return load_tbrl_csv(tbrl_csv, default_limits)


@pytest.fixture(scope="module")
def rows(tbrl_csv):
    csv.field_size_limit(sys.maxsize)
    with tbrl_csv.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_all_rows_load_and_validate(loaded):
    report = validate_tasks(loaded.tasks, loaded.problems)
    assert loaded.problems == []
    assert report.problems == []
    assert len(report.valid) == 328


def test_counts_by_difficulty(loaded):
    counts = Counter(t.difficulty.value for t in loaded.tasks)
    assert counts == {"easy": 39, "medium": 137, "hard": 121, "extremely_hard": 31}


def test_row_fields(loaded):
    task = next(t for t in loaded.tasks if t.id == "git-deployment-workflow-setup")
    assert task.verifier is VerifierKind.WEIGHTED_PYTEST
    assert task.test_weights == {
        "test_hook_script_executable": 0.35,
        "test_nginx_service_running": 0.15,
        "test_deployment_works_correctly": 0.5,
    }
    assert task.tags == ("version-control", "build-automation", "web-server", "sys-admin")
    assert list(task.tests) == ["test_outputs.py"]
    assert task.environment.dockerfile.startswith("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest")
    assert task.limits.network is False
    assert task.source.endswith("#row=1")


def test_additional_files_split_into_build_context_and_pre_agent_files(loaded):
    with_files = [t for t in loaded.tasks if t.environment.build_context or t.files]
    assert len(with_files) == 201
    # Only files no COPY/ADD references are written in before the agent starts.
    task = next(t for t in loaded.tasks if t.id == "draft_dp_7e6f2500")
    assert set(task.files) == {"server-expired.crt"}
    assert set(task.environment.build_context) == {"payment-gateway.conf", "generate_certs.sh"}
    assert sum(1 for t in loaded.tasks if t.files) == 4


def write_csv(path: Path, rows: list[dict], columns=COLUMNS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_missing_column_names_the_column(tmp_path, rows, default_limits):
    path = write_csv(tmp_path / "t.csv", rows[:2], [c for c in COLUMNS if c != "test_weights"])
    with pytest.raises(TaskSourceError, match=r"missing column\(s\) \['test_weights'\]"):
        load_tbrl_csv(path, default_limits)


def test_bad_rows_are_reported_and_excluded_not_repaired(tmp_path, rows, default_limits):
    good, broken_json, unknown_key, escape = (dict(r) for r in rows[:4])
    broken_json["test_weights"] = '{"test_a": 0.5,'
    weights = json.loads(unknown_key["test_weights"])
    first = sorted(weights)[0]
    weights["test_does_not_exist"] = weights.pop(first)
    unknown_key["test_weights"] = json.dumps(weights)
    escape["additional_files"] = json.dumps({"../../etc/passwd": "x"})
    duplicate = dict(good)
    path = write_csv(tmp_path / "t.csv", [good, broken_json, unknown_key, escape, duplicate])

    loaded = load_tbrl_csv(path, default_limits)
    report = validate_tasks(loaded.tasks, loaded.problems)
    messages = {p.task_id: [] for p in report.problems}
    for p in report.problems:
        messages[p.task_id].append(f"{p.field}: {p.message}")

    assert report.valid == []  # the good row is a duplicate of the last one: both go
    assert messages[good["task_id"]] == [f"id: duplicate id, used 2 times (csv:{path}#row=1, csv:{path}#row=5)"]
    assert messages[broken_json["task_id"]] == [
        "test_weights: broken JSON (Expecting property name enclosed in double quotes at line 1 column 16)"
    ]
    assert len(messages[unknown_key["task_id"]]) == 2
    assert messages[unknown_key["task_id"]][0].startswith(
        "test_weights: weight keys ['test_does_not_exist'] name no test function"
    )
    assert (
        messages[unknown_key["task_id"]][1]
        == f"test_weights: test functions ['{first}'] have no weight; give every test a weight or omit weights"
    )
    assert messages[escape["task_id"]] == ["files: path '../../etc/passwd' escapes its folder with '..'"]
    problem = next(p for p in report.problems if p.task_id == broken_json["task_id"])
    assert str(problem).startswith(f"task {broken_json['task_id']!r} (csv:{path}#row=2): test_weights: broken JSON")
