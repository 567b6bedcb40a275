"""Task CLI.

    python -m terminal_rl.tasks prepare [hydra overrides]        load, validate, report, export
    python -m terminal_rl.tasks show TASK_ID [hydra overrides]   print one task
    python -m terminal_rl.tasks export-harbor OUT_DIR [overrides] write valid tasks as Harbor folders

Overrides compose ``conf/prepare.yaml``, e.g. ``task_set.val_fraction=0.2 run.id=dev``. An entry
point (the top floor, ``docs/architecture.md``): it may use the sandbox's base-image report.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from terminal_rl.config import compose
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_image_report import report_base_images
from terminal_rl.tasks.dockerfile import task_set_images
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders import TaskSourceError
from terminal_rl.tasks.model import Difficulty, Task
from terminal_rl.tasks.prepare import PreparedTaskSet, prepare_task_set
from terminal_rl.tasks.pytest_source import effective_weights
from terminal_rl.tasks.task_set import load_task_set, task_set_config
from terminal_rl.tasks.validation import validate_tasks

console = Console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m terminal_rl.tasks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="load, validate, report and export the task set")
    show = commands.add_parser("show", help="print one task")
    show.add_argument("task_id")
    export = commands.add_parser("export-harbor", help="write the valid tasks as Harbor task folders")
    export.add_argument("out_dir", type=Path)
    args, overrides = parser.parse_known_args(argv)
    cfg = compose("prepare", overrides)
    task_set = task_set_config(cfg.task_set)
    try:
        if args.command == "prepare":
            prepared = prepare_task_set(task_set, RunContext.from_config(cfg.run), cfg.agent.loop_name)
            print_summary(prepared)
            report_base_images(
                SandboxConfig.from_node(cfg.sandbox),
                task_set_images(prepared.train + prepared.val),
                prepared.report_file,
                console,
            )
            return 0
        report = validate_tasks(*_loaded(task_set))
        if args.command == "show":
            return show_task(args.task_id, report.valid, report.problems)
        for task in report.valid:
            export_harbor(task, args.out_dir)
        console.print(
            f"wrote {len(report.valid)} Harbor task folders to {args.out_dir} ({len(report.rejected_ids)} rejected)"
        )
        return 0
    except TaskSourceError as error:
        console.print(f"[red]error:[/red] {error}")
        return 2


def _loaded(task_set):
    loaded = load_task_set(task_set)
    return loaded.tasks, loaded.problems


def print_summary(prepared: PreparedTaskSet) -> None:
    counts = prepared.counts()
    table = Table(title="Tasks by difficulty")
    table.add_column("difficulty")
    for split in counts:
        table.add_column(split, justify="right")
    table.add_column("total", justify="right")
    for difficulty in Difficulty:
        row = [counts[split][difficulty.value] for split in counts]
        table.add_row(difficulty.value, *map(str, row), str(sum(row)))
    totals = [sum(counts[split].values()) for split in counts]
    table.add_row("all", *map(str, totals), str(sum(totals)), style="bold")
    console.print(table)
    categories = Table(title="Tasks by category")
    categories.add_column("category")
    categories.add_column("tasks", justify="right")
    for category, n in Counter(t.category for t in prepared.train + prepared.val).most_common():
        categories.add_row(category, str(n))
    console.print(categories)
    if prepared.problems:
        rejected = Table(title=f"Rejected: {len({p.task_id for p in prepared.problems})} tasks")
        for column in ("task", "field", "problem", "where"):
            rejected.add_column(column)
        for problem in prepared.problems:
            rejected.add_row(problem.task_id, problem.field, problem.message, problem.location)
        console.print(rejected)
    else:
        console.print("Rejected: none")
    console.print(f"train: {prepared.train_file}\nval:   {prepared.val_file}\nreport: {prepared.report_file}")


def show_task(task_id: str, tasks: list[Task], problems) -> int:
    matches = [t for t in tasks if t.id == task_id]
    for problem in problems:
        if problem.task_id == task_id:
            console.print(f"[red]rejected:[/red] {problem}")
    if not matches:
        if not any(p.task_id == task_id for p in problems):
            console.print(f"[red]error:[/red] no task {task_id!r} in this task set")
        return 1
    task = matches[0]
    table = Table(show_header=False, title=f"{task.id}  ({task.content_hash[:12]})")
    for name, value in (
        ("title", task.title),
        ("difficulty", task.difficulty.value),
        ("category", task.category),
        ("tags", ", ".join(task.tags)),
        ("verifier", task.verifier.value),
        ("source", task.source),
        ("limits", str(task.limits)),
        ("build context", ", ".join(sorted(task.environment.build_context)) or "-"),
        ("files before agent", ", ".join(sorted(task.files)) or "-"),
        (
            "weights",
            ", ".join(f"{k}={v:g}" for k, v in effective_weights(task).items())
            if task.verifier.value != "harbor"
            else "test.sh",
        ),
        ("prompt", task.prompt),
        ("dockerfile", task.environment.dockerfile or task.environment.image or "-"),
    ):
        table.add_row(name, value)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
