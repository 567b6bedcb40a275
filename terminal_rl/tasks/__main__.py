"""Task CLI (Hydra app on ``conf/prepare.yaml``).

    python -m terminal_rl.tasks [overrides]                              load, validate, report, export
    python -m terminal_rl.tasks command=show task_id=ID [overrides]      print one task
    python -m terminal_rl.tasks command=export_harbor out_dir=DIR        write valid tasks as Harbor folders

Overrides such as ``task_set.val_fraction=0.2 run.id=dev``. An entry point (the top floor,
``docs/architecture.md``): it may use the sandbox's base-image report.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from terminal_rl.config import chosen_command
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_image_report import report_base_images
from terminal_rl.tasks.dockerfile import task_set_images
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders import TaskSourceError
from terminal_rl.tasks.model import Difficulty, Task
from terminal_rl.tasks.prepare import PreparedTaskSet, prepare_task_set
from terminal_rl.tasks.pytest_source import effective_weights
from terminal_rl.tasks.task_set import task_set_config, validated_task_set

console = Console()


COMMANDS = ("prepare", "show", "export_harbor")


@hydra.main(config_path="../../conf", config_name="prepare", version_base="1.3")
def main(cfg: DictConfig) -> None:
    sys.exit(run(cfg))


def run(cfg: DictConfig) -> int:
    command = chosen_command(cfg.command, COMMANDS)
    task_set = task_set_config(cfg.task_set)
    try:
        if command == "prepare":
            prepared = prepare_task_set(task_set, RunContext.from_config(cfg.run), cfg.agent.loop_name)
            print_summary(prepared)
            report_base_images(
                SandboxConfig.from_node(cfg.sandbox),
                task_set_images(prepared.train + prepared.val),
                prepared.report_file,
                console,
            )
            return 0
        report = validated_task_set(task_set)
        if command == "show":
            return show_task(cfg.task_id, report.valid, report.problems)
        if not cfg.out_dir:
            raise SystemExit("command=export_harbor needs out_dir=DIR")
        out_dir = Path(cfg.out_dir)
        for task in report.valid:
            export_harbor(task, out_dir)
        console.print(
            f"wrote {len(report.valid)} Harbor task folders to {out_dir} ({len(report.rejected_ids)} rejected)"
        )
        return 0
    except TaskSourceError as error:
        console.print(f"[red]error:[/red] {error}")
        return 2


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
    main()
