"""The offline filter's output read by training: which task ids to keep (JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from terminal_rl.config import project_path


def write_keep_list(path: Path, kept: list[str], dropped: dict[str, str], details: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"kept": sorted(kept), "dropped": dropped, **details}, indent=2) + "\n", encoding="utf-8"
    )


def read_keep_list(path: str | Path) -> frozenset[str]:
    file = project_path(path)
    if not file.is_file():
        raise FileNotFoundError(f"data_filter.keep_list={path}: no such file; run `python -m terminal_rl.filter` first")
    return frozenset(json.loads(file.read_text(encoding="utf-8"))["kept"])
