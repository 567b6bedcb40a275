"""Generate training tasks (Hydra app), written as Harbor task folders.

    python -m terminal_rl.generate                                       every procedural family (offline)
    python -m terminal_rl.generate family=csv_report count=1000 seed=1
    python -m terminal_rl.generate source=llm generator.llm.model=openai/MODEL policy=litellm ...

``source=procedural`` writes tasks from code (``tasks/families``); ``source=llm`` runs the
generator pipeline (``generation/pipeline.py``), resumable in ``work_dir``, and ends with its funnel
(``<work_dir>/report.json``). Train on either with ``task_set.format=harbor task_set.path=<output_dir>``.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import hydra
from omegaconf import DictConfig

from terminal_rl.config import project_path
from terminal_rl.console import Console, app_console, print_header
from terminal_rl.run_context import RunContext


def procedural(cfg: DictConfig, console: Console) -> dict:
    """``count`` tasks of each family (with the generator's limits) as Harbor folders in ``output_dir``."""
    from terminal_rl.config import to_dataclass
    from terminal_rl.tasks.families import FAMILIES
    from terminal_rl.tasks.harbor_export import export_harbor
    from terminal_rl.tasks.model import Limits
    from terminal_rl.tasks.procedural import procedural_tasks

    limits = to_dataclass(cfg.generator.limits, Limits)
    families = sorted(FAMILIES) if cfg.family == "all" else [cfg.family]
    output = project_path(cfg.output_dir)
    written = Counter()
    for family in families:
        for task in procedural_tasks(family, cfg.count, cfg.seed, list(cfg.levels), limits):
            export_harbor(task, output)
            written[(family, task.difficulty.value)] += 1
    summary = {
        "source": "procedural",
        "output_dir": str(output),
        "seed": cfg.seed,
        "tasks": {f"{family}/{level}": n for (family, level), n in sorted(written.items())},
    }
    console.print(f"{sum(written.values())} tasks of {len(families)} families -> {output}")
    return summary


async def llm_pipeline(cfg: DictConfig, console: Console) -> dict:
    from terminal_rl.agent.config import AgentConfig
    from terminal_rl.agent.policies import make_policy
    from terminal_rl.agent.policies.json_chat import JsonChat
    from terminal_rl.agent.policies.litellm_policy import endpoint_problem
    from terminal_rl.agent.protocols import make_protocol
    from terminal_rl.generation.candidates import CandidateStore, draw_specs
    from terminal_rl.generation.config import GeneratorConfig
    from terminal_rl.generation.pipeline import Pipeline, SolveFilter
    from terminal_rl.generation.report import funnel, print_funnel
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.images.node_images import provide_node_images
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.runtime.sandbox import SandboxFactory

    config = GeneratorConfig.from_node(cfg.generator)
    sandbox, run = SandboxConfig.from_node(cfg.sandbox), RunContext.from_config(cfg.run)
    # Before any LLM call: a base image the Dockerfiles may name but this engine cannot provide is the
    # set-up's problem, never a candidate's to repair.
    with console.rich.status(f"base images the Dockerfiles may use: {', '.join(config.base_images)}"):
        unmatched = provide_node_images(docker_client(sandbox.docker_host), sandbox, config.base_images, run).unmatched
    if unmatched:
        raise SystemExit(
            "generate: generator.base_images names images this machine cannot provide: " + "; ".join(unmatched.values())
        )
    # Then one tiny call: a wrong key, model or parameter stops the run here, named.
    problem = await endpoint_problem(config.llm)
    if problem:
        raise SystemExit(f"generate: the generator's model does not answer: {problem}")
    work_dir = project_path(cfg.work_dir)
    store = CandidateStore(work_dir)
    candidates = store.candidates(
        cfg.seed, draw_specs(config.candidates, cfg.seed, config.categories, config.complexities, config.personas)
    )
    agent = AgentConfig.from_node(cfg.agent)
    solver = SolveFilter(
        make_policy(cfg.policy, agent),
        make_protocol(agent.protocol),
        agent.limits,
        work_dir / "solve" / "results.jsonl",
    )
    async with SandboxFactory(sandbox, run) as factory:
        pipeline = Pipeline(
            config,
            store,
            JsonChat(config.llm, config.max_tokens),
            factory,
            solver,
            project_path(cfg.output_dir),
            console.rich,
        )
        await pipeline.run(candidates)
    report = funnel(candidates, pipeline.stage_seconds)
    (work_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_funnel(report, console.rich)
    console.print(f"accepted tasks: {project_path(cfg.output_dir)}; report: {work_dir / 'report.json'}")
    if not report["accepted"] and report["waiting"]:
        raise SystemExit(
            f"generate: nothing accepted, and {sum(report['waiting'].values())} candidates wait on errors "
            f"({', '.join(report['waiting'])}): fix them and run the same command again (run.id={cfg.run.id})"
        )
    return report


def header_rows(cfg: DictConfig) -> list[tuple[str, str]]:
    if cfg.source == "procedural":
        return [
            (
                "source",
                f"procedural: {cfg.family} famil{'ies' if cfg.family == 'all' else 'y'}, {cfg.count} tasks "
                f"each over levels {', '.join(cfg.levels)}, seed {cfg.seed}",
            ),
            ("output", str(project_path(cfg.output_dir))),
        ]
    return [
        ("source", f"llm: {cfg.generator.candidates} candidates from {cfg.generator.llm.model}, seed {cfg.seed}"),
        (
            "solver",
            f"{cfg.policy.kind} {cfg.policy.get('model', '')}, {cfg.generator.solve_attempts} attempts per task",
        ),
        ("output", f"{project_path(cfg.output_dir)}  (work dir {project_path(cfg.work_dir)})"),
    ]


def run(cfg: DictConfig, console: Console) -> dict:
    if cfg.source not in ("procedural", "llm"):
        raise ValueError(f"source={cfg.source!r} is not one of procedural, llm")
    print_header(console, "generate", RunContext.from_config(cfg.run), header_rows(cfg))
    if cfg.source == "procedural":
        return procedural(cfg, console)
    return asyncio.run(llm_pipeline(cfg, console))


@hydra.main(config_path="../conf", config_name="generate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    with app_console("generate", RunContext.from_config(cfg.run), bool(cfg.verbose)) as console:
        run(cfg, console)


if __name__ == "__main__":
    main()
