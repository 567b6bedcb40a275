"""Judge CLI (Hydra app on ``conf/judge_cli.yaml``).

    python -m terminal_rl.judge command=switch backend.model=MODEL [backend.base_url=URL]
            [backend.key_env=VAR] run.id=RUN
        change the run's judge backend now (the judge service picks it up on its next judgement)
    python -m terminal_rl.judge command=show run.id=RUN
    python -m terminal_rl.judge command=calibrate backend.model=MODEL [backend.base_url=URL] [attempts=3]
    python -m terminal_rl.judge command=report                  rank every judge calibrated so far, write a PNG
    python -m terminal_rl.judge command=make_calibration_set    re-record the labelled trajectories

The control file is ``<run.output_root>/<run.id>/judge/backend.json``; it names the key's environment
variable, never a key.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace

import hydra
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from terminal_rl.config import chosen_command, project_path, to_dataclass
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


COMMANDS = ("switch", "show", "calibrate", "report", "make_calibration_set")


@hydra.main(config_path="../../conf", config_name="judge_cli", version_base="1.3")
def main(cfg: DictConfig) -> None:
    sys.exit(run(cfg))


def run(cfg: DictConfig) -> int:
    command = chosen_command(cfg.command, COMMANDS)
    config = to_dataclass(cfg.judge, JudgeConfig)
    control_dir = RunContext.from_config(cfg.run).judge_control_dir
    if command in ("switch", "calibrate") and not cfg.backend.model:
        raise SystemExit(f"command={command} needs backend.model=MODEL (a litellm model name)")
    backend = JudgeBackend(cfg.backend.model, cfg.backend.base_url, cfg.backend.key_env)
    if command == "switch":
        path = write_backend(control_dir, backend)
        console.print(f"judge backend for run {cfg.run.id} is now {backend.model} ({path})")
    elif command == "show":
        shown = read_backend(control_dir, config.default_backend)
        console.print(f"run {cfg.run.id}: judge backend {shown.label} (key from ${shown.api_key_env or '-'})")
    elif command == "calibrate":
        return run_calibration(config, backend, int(cfg.attempts), cfg)
    elif command == "report":
        return report(config)
    else:
        return record_calibration_set(cfg)
    return 0


def run_calibration(config: JudgeConfig, backend: JudgeBackend, attempts: int, cfg: DictConfig) -> int:
    calibration_dir = project_path(config.calibration_dir)
    config = replace(config, model=backend.model, base_url=backend.base_url, api_key_env=backend.api_key_env)
    # Calibration keeps its own cache per judge, beside its results: reruns are free.
    service = JudgeService(config, calibration_dir / "cache" / result_path(calibration_dir, backend.label).stem)
    result = asyncio.run(calibrate(service, _calibration_task(cfg), load_cases(), load_trajectories(), attempts))
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
        console.print(
            f"[red]error:[/red] no calibration results in {calibration_dir}; "
            "run `python -m terminal_rl.judge command=calibrate` first"
        )
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


def record_calibration_set(cfg: DictConfig) -> int:
    from terminal_rl.agent.episode import EpisodeLimits
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.runtime.sandbox import SandboxFactory

    limits = EpisodeLimits(
        max_turns=20, max_tokens_per_turn=4000, max_context_tokens=32768, max_consecutive_parse_errors=3
    )

    async def record():
        async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), RunContext.from_config(cfg.run)) as factory:
            return await make_calibration_set(_calibration_task(cfg), factory, limits, load_cases())

    for trajectory in asyncio.run(record()):
        console.print(
            f"{trajectory.metadata['case']}: {len(trajectory.turns)} turns, ended {trajectory.termination}, "
            f"tests {trajectory.score}"
        )
    return 0


def _calibration_task(cfg: DictConfig):
    from terminal_rl.tasks.task_set import load_task_set, task_set_config

    task_set = task_set_config(cfg.task_set)
    return next(t for t in load_task_set(task_set).tasks if t.id == CALIBRATION_TASK)


if __name__ == "__main__":
    main()
