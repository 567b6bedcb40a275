"""Verification time per task, against a bare ``docker exec pytest`` of the same tests in the same run.

    .venv/bin/python benchmarks/verifier_time.py [--repeats 8] [--task csv-file-parsing-amount-sum]

One sandbox of the task, its honest solution written once; then ``repeats`` hardened verifications
(``verify``: the verifier container, the tests' root, the tests) and ``repeats`` bare runs of the
same tests in the sandbox itself (no isolation: what a harness without a verifier pays). Prints the
medians and their ratio. Run on two checkouts to compare verifier versions (issue 30's note).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from terminal_rl.config import compose
from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.task_set import load_task_set, task_set_config

SOLUTIONS = {
    "csv-file-parsing-amount-sum": "printf '%s\\n' 'import csv' "
    "\"print(sum(float(r['Amount']) for r in csv.DictReader(open('data.csv'))))\" > parser.py"
}


async def measure(task, repeats: int) -> tuple[list[float], list[float], list[float]]:
    config = SandboxConfig.from_node(compose("services").sandbox)
    run = RunContext.from_config(
        RunConfig(id="verifier-bench", output_root="/tmp/terminal_rl-bench", node_local_root="/tmp/terminal_rl-bench")
    )
    hardened, bare, scores = [], [], []
    async with SandboxFactory(config, run) as factory, factory.task_sandbox(task) as sandbox:
        await sandbox.run(SOLUTIONS[task.id], timeout=60)
        for name, source in task.tests.items():
            await sandbox.files.write_text(f"/tmp/bare_tests/{name}", source)
        await verify(sandbox, task)  # warm: page cache, the toolchain's first start
        for _ in range(repeats):
            started = time.perf_counter()
            scores.append((await verify(sandbox, task)).score)
            hardened.append(time.perf_counter() - started)
            started = time.perf_counter()
            await sandbox.run("python3 -m pytest -q /tmp/bare_tests -p no:cacheprovider >/dev/null", timeout=120)
            bare.append(time.perf_counter() - started)
    return hardened, bare, scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--task", default="csv-file-parsing-amount-sum", choices=sorted(SOLUTIONS))
    args = parser.parse_args()
    [task] = [t for t in load_task_set(task_set_config(compose("evaluate").task_set)).tasks if t.id == args.task]
    hardened, bare, scores = asyncio.run(measure(task, args.repeats))
    print(f"task {task.id}: scores {sorted(set(scores))}")
    print(
        f"verification (verify):        median {statistics.median(hardened):.2f} s  "
        f"min {min(hardened):.2f}  max {max(hardened):.2f}  (n={len(hardened)})"
    )
    print(f"bare pytest in the sandbox:   median {statistics.median(bare):.2f} s  (n={len(bare)})")
    print(f"ratio: {statistics.median(hardened) / statistics.median(bare):.1f}x")


if __name__ == "__main__":
    main()
