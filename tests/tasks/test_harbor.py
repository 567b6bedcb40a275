import subprocess
import sys
import tomllib

from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import Difficulty, VerifierKind
from terminal_rl.tasks.validation import validate_tasks


def files_below(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_loads_harbor_folder(harbor_fixture, default_limits):
    loaded = load_harbor(harbor_fixture.parent, default_limits)
    assert loaded.problems == []
    [task] = loaded.tasks
    assert task.id == "count-lines"
    assert task.verifier is VerifierKind.HARBOR
    assert task.difficulty is Difficulty.EASY
    assert task.tags == ("counting", "shell")
    assert task.limits.agent_timeout_sec == 120.0 and task.limits.verifier_timeout_sec == 60.0
    assert task.limits.memory_mb == 1024  # memory = "1G"
    assert task.limits.pids == default_limits.pids  # Harbor has no pids limit: the documented default
    assert set(task.environment.build_context) == {"data/one.txt", "data/two.txt"}
    assert set(task.tests) == {"test.sh", "test_total.py"}
    assert task.solution.startswith("#!/bin/bash")
    assert task.metadata == {"author_name": "terminal_rl tests"}
    assert validate_tasks([task]).problems == []


def test_harbor_round_trip(harbor_fixture, default_limits, tmp_path):
    [task] = load_harbor(harbor_fixture, default_limits).tasks
    folder = export_harbor(task, tmp_path)
    [again] = load_harbor(folder, default_limits).tasks
    assert again.with_source(task.source) == task
    assert again.content_hash == task.content_hash
    original, exported = files_below(harbor_fixture), files_below(folder)
    assert set(exported) == set(original)
    assert {p: d for p, d in exported.items() if p != "task.toml"} == {
        p: d for p, d in original.items() if p != "task.toml"
    }
    written = tomllib.loads((folder / "task.toml").read_text())
    assert written["metadata"]["difficulty"] == "easy" and written["environment"]["memory_mb"] == 1024
    assert (folder / "tests" / "test.sh").stat().st_mode & 0o111


def test_csv_task_exports_to_a_harbor_folder_with_weighted_scoring(tbrl_csv, default_limits, tmp_path):
    task = next(t for t in load_tbrl_csv(tbrl_csv, default_limits).tasks if t.id == "draft_dp_7e6f2500")
    folder = export_harbor(task, tmp_path)
    [exported] = load_harbor(folder, default_limits).tasks
    assert exported.prompt == task.prompt
    assert exported.difficulty == task.difficulty and exported.limits == task.limits
    assert set(exported.tests) == {"test.sh", "test_outputs.py", "test_weights.json", "weighted_reward.py"}
    # The pre-agent file is baked into the image for standard harnesses, and read back as a start file.
    assert (folder / "environment/_preagent/server-expired.crt").read_bytes() == task.files["server-expired.crt"]
    assert (
        (folder / "environment/Dockerfile")
        .read_text()
        .endswith('COPY ["_preagent/server-expired.crt", "server-expired.crt"]\n')
    )
    assert exported.files == task.files and exported.environment.build_context == task.environment.build_context
    assert exported.environment.dockerfile == task.environment.dockerfile + "\n"  # the CSV's ends without one
    # The copied scorer runs standalone on a JUnit report.
    names = list(task.test_weights)
    junit = tmp_path / "junit.xml"
    junit.write_text(
        f'<testsuite><testcase classname="test_outputs" name="{names[0]}"/>'
        f'<testcase classname="test_outputs" name="{names[1]}"><failure/></testcase></testsuite>'
    )
    out = subprocess.run(
        [sys.executable, folder / "tests/weighted_reward.py", junit, folder / "tests/test_weights.json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert float(out) == task.test_weights[names[0]]


def test_harbor_problems_are_reported(harbor_fixture, default_limits, tmp_path):
    bad = tmp_path / "bad"
    export_harbor(load_harbor(harbor_fixture, default_limits).tasks[0], tmp_path)
    (tmp_path / "count-lines").rename(bad)
    (bad / "task.toml").write_text(
        (bad / "task.toml").read_text().replace('difficulty = "easy"', 'difficulty = "trivial"')
    )
    loaded = load_harbor(tmp_path, default_limits)
    assert loaded.tasks == []
    assert [str(p) for p in loaded.problems] == [
        f"task 'bad' (harbor:{bad}): difficulty: 'trivial' is not one of easy|medium|hard|extremely_hard"
    ]
