"""notebooks/: committed without outputs, and each runs top to bottom (nbclient) on the CPU
end-to-end run's logs."""

import nbformat
import pytest
from nbclient import NotebookClient

from terminal_rl.config import PROJECT_ROOT

NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["run_analysis.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code), (
        f"clear {path.name}'s outputs before committing"
    )


@pytest.mark.verl
@pytest.mark.docker
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom_on_the_cpu_run(path, cpu_run, monkeypatch):
    monkeypatch.setenv("TERMINAL_RL_RUN_DIR", str(cpu_run["dir"]))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"{cpu_run['dir']}: 3 steps" in printed, printed
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 9, "one per figure of terminal_rl.plot.figures"
