"""Judge CLI.

    python -m terminal_rl.judge switch MODEL [--base-url URL] [--key-env VAR] run.id=RUN
        change the run's judge backend now (the judge service picks it up on its next judgement)
    python -m terminal_rl.judge show run.id=RUN
    python -m terminal_rl.judge calibrate --model MODEL [--base-url URL] [--key-env VAR] [--attempts 3]
    python -m terminal_rl.judge report            rank every judge calibrated so far, write a PNG
    python -m terminal_rl.judge make-calibration-set     re-record the labelled trajectories

Overrides compose ``conf/judge_cli.yaml`` (``run``, ``judge``). The control file is
``<run.output_root>/<run.id>/judge/backend.json``; it names the key's environment variable, never a key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import replace

from rich.console import Console
from rich.table import Table

from terminal_rl.config import compose, project_path, to_dataclass
from terminal_rl.judge.backend import JudgeBackend, read_backend, write_backend
from terminal_rl.judge.calibration import (
    CALIBRATION_TASK,
    calibrate,
    load_cases,
    load_results,
    load_trajectories,
    make_calibration_set,
    plot_results,
    result_path,
)
from terminal_rl.judge.service import JudgeConfig, JudgeService
from terminal_rl.run_context import RunContext

console = Console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m terminal_rl.judge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("switch", "calibrate"):
        command = commands.add_parser(name)
        if name == "switch":
            command.add_argument("model")
        else:
            command.add_argument("--model", required=True)
            command.add_argument("--attempts", type=int, default=3)
        command.add_argument("--base-url", default="")
        command.add_argument("--key-env", default="", help="name of the environment variable holding the key")
    commands.add_parser("show")
    commands.add_parser("report")
    commands.add_parser("make-calibration-set")
    args, overrides = parser.parse_known_args(argv)
    cfg = compose("judge_cli", overrides)
    config = to_dataclass(cfg.judge, JudgeConfig)
    control_dir = RunContext.from_config(cfg.run).judge_control_dir
    if args.command == "switch":
        path = write_backend(control_dir, JudgeBackend(args.model, args.base_url, args.key_env))
        console.print(f"judge backend for run {cfg.run.id} is now {args.model} ({path})")
    elif args.command == "show":
        backend = read_backend(control_dir, config.default_backend)
        console.print(f"run {cfg.run.id}: judge backend {backend.label} (key from ${backend.api_key_env or '-'})")
    elif args.command == "calibrate":
        return run_calibration(config, args, cfg)
    elif args.command == "report":
        return report(config)
    else:
        return record_calibration_set(cfg)
    return 0


def run_calibration(config: JudgeConfig, args, cfg) -> int:
    calibration_dir = project_path(config.calibration_dir)
    backend = JudgeBackend(args.model, args.base_url, args.key_env)
    config = replace(config, model=backend.model, base_url=backend.base_url, api_key_env=backend.api_key_env)
    # Calibration keeps its own cache per judge, beside its results: reruns are free.
    service = JudgeService(config, calibration_dir / "cache" / result_path(calibration_dir, backend.label).stem)
    result = asyncio.run(calibrate(service, _calibration_task(cfg), load_cases(), load_trajectories(), args.attempts))
    path = result_path(calibration_dir, backend.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = Table(title=f"{backend.label}: {result['passed']}/{len(result['cases'])} cases in range")
    for column in ("case", "expected", "scores", "mean", "spread", "pass"):
        table.add_column(column)
    for case in result["cases"]:
        scores = ", ".join("missing" if s is None else f"{s:.2f}" for s in case["scores"])
        mean = "-" if case["mean"] is None else f"{case['mean']:.2f}"
        table.add_row(
            case["id"],
            "{:.2f}-{:.2f}".format(*case["expected"]),
            scores,
            mean,
            f"{case['spread']:.2f}",
            "yes" if case["passed"] else "NO",
        )
    console.print(table)
    console.print(
        f"mean score {result['mean_score']:.3f}; {result['calls']} calls, {result['tokens']} tokens, "
        f"${result['cost_usd']:.4f}; results: {path}"
    )
    return 0


def report(config: JudgeConfig) -> int:
    calibration_dir = project_path(config.calibration_dir)
    results = load_results(calibration_dir)
    if not results:
        console.print(f"[red]error:[/red] no calibration results in {calibration_dir}; run `judge calibrate` first")
        return 1
    table = Table(title="Judges ranked by calibration")
    for column in ("rank", "judge", "cases in range", "mean score", "mean spread", "cost (USD)"):
        table.add_column(column)
    for rank, result in enumerate(results, start=1):
        spread = sum(c["spread"] for c in result["cases"]) / len(result["cases"])
        table.add_row(
            str(rank),
            result["judge"],
            f"{result['passed']}/{len(result['cases'])}",
            f"{result['mean_score']:.3f}",
            f"{spread:.3f}",
            f"{result['cost_usd']:.4f}",
        )
    console.print(table)
    console.print(f"plot: {plot_results(results, calibration_dir / 'report.png')}")
    return 0


def record_calibration_set(cfg) -> int:
    from terminal_rl.agent.episode import EpisodeLimits
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.runtime.sandbox import SandboxFactory

    services = compose("services", [f"run.id={cfg.run.id}"])
    limits = EpisodeLimits(
        max_turns=20, max_tokens_per_turn=4000, max_context_tokens=32768, max_consecutive_parse_errors=3
    )

    async def record():
        async with SandboxFactory(
            SandboxConfig.from_node(services.sandbox), RunContext.from_config(cfg.run)
        ) as factory:
            return await make_calibration_set(_calibration_task(cfg), factory, limits, load_cases())

    for trajectory in asyncio.run(record()):
        console.print(
            f"{trajectory.metadata['case']}: {len(trajectory.turns)} turns, ended {trajectory.termination}, "
            f"tests {trajectory.score}"
        )
    return 0


def _calibration_task(cfg):
    from terminal_rl.tasks.task_set import load_task_set, task_set_config

    task_set = task_set_config(compose("prepare").task_set)
    return next(t for t in load_task_set(task_set).tasks if t.id == CALIBRATION_TASK)


if __name__ == "__main__":
    sys.exit(main())
