"""Our Harbor exports against the real Harbor's own linter and task schema (Harbor 0.26 from the
package index: ``harbor.lint.task.lint_task``, which checks every task.toml key against
``harbor.models.task.config.TaskConfig`` and validates it). Harbor needs Python >= 3.12, this project
3.11: the linter runs in a virtual environment of its own, made once with the machine's newest Python
(Harbor without its service dependencies; the linter imports none of them)."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv

HARBOR = "harbor==0.26.0"
# What harbor.lint.task imports (found by importing it): Harbor's other dependencies are its services'.
LINT_DEPENDENCIES = ("pydantic", "toml", "shortuuid", "packaging", "pyyaml", "pathspec")
# The schema's rules. The linter's others judge the task itself (e.g. unpinned-image: a FROM without a
# digest; root-agent: no USER), as the sources wrote it; an export keeps the task as it is.
CONFIG_RULES = ("unknown-config-field", "invalid-task-config", "invalid-task-files")
LINT = """
import json, sys
from pathlib import Path
from harbor.lint.task import lint_task
print(json.dumps({p: [f.model_dump(mode="json") for f in lint_task(Path(p))] for p in sys.argv[1:]}))
"""


def newer_python() -> str | None:
    """A Python >= 3.12 on this machine (PATH, then pyenv's versions), or None."""
    found = [shutil.which(f"python3.{minor}") for minor in range(20, 11, -1)]
    found += sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.1[2-9]*/bin/python")), reverse=True)
    for python in filter(None, found):  # a pyenv shim on PATH may name a version it cannot run
        probe = subprocess.run([python, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"], capture_output=True)
        if probe.returncode == 0:
            return python
    return None


@pytest.fixture(scope="session")
def harbor_lint() -> Path:
    """The Python of a virtual environment with Harbor 0.26's linter (made once, then reused)."""
    python = newer_python()
    if python is None:
        pytest.skip("Harbor 0.26 needs Python >= 3.12 and this machine has none (e.g. `pyenv install 3.12`)")
    venv = Path.home() / ".cache/terminal_rl" / HARBOR.replace("==", "-")
    ready = venv / ".ready"
    if not ready.is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", HARBOR], check=True)
        subprocess.run([*pip, *LINT_DEPENDENCIES], check=True)
        ready.touch()
    return venv / "bin/python"


def lint(harbor_python: Path, folders: list[Path]) -> dict[str, list[dict]]:
    result = subprocess.run([str(harbor_python), "-c", LINT, *map(str, folders)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_every_export_passes_harbors_own_linter(harbor_lint, tbrl_csv, harbor_fixture, default_limits, tmp_path):
    tasks = load_tbrl_csv(tbrl_csv, default_limits).tasks + load_harbor(harbor_fixture, default_limits).tasks
    folders = [export_harbor(task, tmp_path / "exports") for task in tasks]
    findings = lint(harbor_lint, folders)
    assert len(findings) == len(tasks) == 329
    config = {folder: [f["message"] for f in found if f["rule"] in CONFIG_RULES] for folder, found in findings.items()}
    assert {folder: found for folder, found in config.items() if found} == {}
    # The limit Harbor has no field for is kept where its schema allows anything, and read back.
    assert all(
        again.limits == task.limits
        for task, folder in zip(tasks, folders)
        for again in load_harbor(folder, default_limits).tasks
    )


def test_the_linter_does_find_an_unknown_field(harbor_lint, harbor_fixture, default_limits, tmp_path):
    """The check above can fail: Harbor's linter names a field its schema lacks (the old export's)."""
    folder = export_harbor(load_harbor(harbor_fixture, default_limits).tasks[0], tmp_path)
    config = folder / "task.toml"
    config.write_text(config.read_text().replace("[environment]\n", "[environment]\npids_limit = 64\n"))
    [found] = lint(harbor_lint, [folder]).values()
    unknown = [f["message"] for f in found if f["rule"] == "unknown-config-field"]
    assert len(unknown) == 1 and "environment.pids_limit" in unknown[0]
