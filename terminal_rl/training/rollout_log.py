"""The run's rollout log (``logs/rollouts/<split>_step<NNNNNN>.<pid>.jsonl``, one trajectory a line,
written by the agent loop; NNNNNN is the step that issued the trajectory's prompt) kept true across a
resume. What a killed attempt logged after its last checkpoint is generated again by the resumed one:
the groups the checkpoint saved in flight (async mode: verl reissues them) and every group issued
after the checkpoint. Those earlier records move to ``logs/rollouts/superseded/`` (kept, but out of
every reader's glob), so each group counts once."""

from __future__ import annotations

import json
from pathlib import Path


def issuing_step(path: Path) -> int:
    return int(path.name.split("_step")[1].split(".")[0])


def supersede(folder: Path, reissued: set[str], resumed_step: int) -> int:
    """Move the logged training trajectories of the ``reissued`` group ids (their ``metadata.uid``),
    and every one issued at ``resumed_step`` or later, into ``folder/superseded/``; returns how many."""
    moved = 0
    for path in sorted(folder.glob("train_step*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        late = issuing_step(path) >= resumed_step
        gone = [line for line in lines if late or json.loads(line)["metadata"].get("uid") in reissued]
        if not gone:
            continue
        (folder / "superseded").mkdir(exist_ok=True)
        with (folder / "superseded" / path.name).open("a", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in gone))
        kept = [line for line in lines if line not in gone]
        if kept:
            path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        else:
            path.unlink()
        moved += len(gone)
    return moved
