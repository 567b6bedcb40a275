"""The tree is formatted and lint-clean as `make lint` checks it (ruff, [tool.ruff] in pyproject.toml),
so CI's test command holds it too."""

import subprocess
import sys
from pathlib import Path

import pytest

from terminal_rl.config import PROJECT_ROOT

RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_ruff_passes(command):
    result = subprocess.run([str(RUFF), *command, "."], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
