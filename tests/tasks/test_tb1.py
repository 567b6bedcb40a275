from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.loaders.tb1 import load_tb1
from terminal_rl.tasks.model import Difficulty, VerifierKind
from terminal_rl.tasks.validation import validate_tasks


def test_loads_tb1_folder(tb1_fixture, default_limits):
    loaded = load_tb1(tb1_fixture.parent, default_limits)
    assert loaded.problems == []
    [task] = loaded.tasks
    assert task.id == "fix-greeting"
    assert task.verifier is VerifierKind.TB1
    assert task.difficulty is Difficulty.MEDIUM
    assert task.prompt.startswith('The script /app/greet.py prints "Helo, world"')
    assert task.tags == ("python", "cli")
    assert task.limits.agent_timeout_sec == 600.0 and task.limits.verifier_timeout_sec == 90.0
    assert task.test_weights == {"test_default_greeting": 0.4, "TestNameOption::test_name": 0.6}
    assert set(task.tests) == {"test_outputs.py", "run-tests.sh"}
    assert set(task.environment.build_context) == {"greet.py", "docker-compose.yaml"}
    assert task.environment.dockerfile.startswith("FROM ghcr.io/laude-institute/t-bench/python-3-13")
    assert "argparse" in task.solution
    assert validate_tasks([task]).problems == []


def test_tb1_exports_to_harbor(tb1_fixture, default_limits, tmp_path):
    [task] = load_tb1(tb1_fixture, default_limits).tasks
    [exported] = load_harbor(export_harbor(task, tmp_path), default_limits).tasks
    assert exported.prompt == task.prompt and exported.limits == task.limits
    assert exported.tests["test_outputs.py"] == task.tests["test_outputs.py"]
    assert "run-tests.sh" not in exported.tests
    assert '"TestNameOption::test_name": 0.6' in exported.tests["test_weights.json"]


def test_tb1_broken_weights_file(tb1_fixture, default_limits, tmp_path):
    import shutil

    folder = tmp_path / "fix-greeting"
    shutil.copytree(tb1_fixture, folder)
    (folder / "test_weights.json").write_text('{"test_default_greeting": 0.4')
    loaded = load_tb1(folder, default_limits)
    assert [f"{p.field}: {p.message}" for p in loaded.problems] == [
        "test_weights: test_weights.json: broken JSON (Expecting ',' delimiter at line 1)"
    ]
