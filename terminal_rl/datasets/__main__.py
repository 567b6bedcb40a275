"""``python -m terminal_rl.datasets [command=build|convert] [overrides]`` (Hydra app on conf/datasets.yaml).

command=build     SFT, DPO and PRM datasets of runs' rollouts and evaluations (the default)
command=convert   external Terminus-2 traces (convert.input=FILE) to SFT records of our terminus_json protocol
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from terminal_rl.config import chosen_command

COMMANDS = ("build", "convert")


def settings_from(cfg: DictConfig):
    from terminal_rl.config import model_location, project_path
    from terminal_rl.datasets.build import BuildSettings

    root = project_path(cfg.run.output_root)
    return BuildSettings(
        runs=[root / run for run in (cfg.runs or [cfg.run.id])],
        results_files=[project_path(f) for f in cfg.results_files],
        out_dir=project_path(cfg.output_dir),
        tokenizer=model_location(cfg.tokenizer),
        enable_thinking=cfg.enable_thinking,
        history=cfg.history,
        sft_min_score=cfg.sft.min_score,
        dpo_chosen_min=cfg.dpo.chosen_min,
        dpo_rejected_max=cfg.dpo.rejected_max,
        dpo_max_pairs=cfg.dpo.max_pairs_per_group,
        forged_filter=cfg.forged_filter.enabled,
        prm_max_episodes=cfg.prm.max_episodes,
    )


def step_scorer(cfg: DictConfig):
    """The PRM step scorer: the judge's model through a judge service whose cache is the output
    run's (``<run>/judge``), so a rebuild asks nothing twice."""
    from terminal_rl.config import to_dataclass
    from terminal_rl.datasets.prm import StepScorer
    from terminal_rl.judge.service import JudgeConfig, JudgeService
    from terminal_rl.run_context import RunContext

    judge = to_dataclass(cfg.judge, JudgeConfig)
    problem = judge.endpoint_problem()
    if problem:
        sys.exit(f"prm.enabled=true, but the judge's model does not answer: {problem}")
    return StepScorer(
        JudgeService(judge, RunContext.from_config(cfg.run).judge_control_dir),
        cfg.prm.rubric,
        cfg.prm.divergence_max_score,
        (judge.max_model_chars, judge.max_observation_chars),
    )


def convert(cfg: DictConfig) -> None:
    import json

    from terminal_rl.agent.tokens import ChatTokenizer, load_tokenizer
    from terminal_rl.config import model_location, project_path
    from terminal_rl.datasets.build import SFT_FIELDS
    from terminal_rl.datasets.terminus2 import convert as convert_terminus2
    from terminal_rl.datasets.writer import write_dataset

    if not cfg.convert.input:
        sys.exit("convert.input=FILE (Terminus-2 traces as JSON lines or parquet) is required")
    source, out = project_path(cfg.convert.input), project_path(cfg.output_dir)
    chat = ChatTokenizer(load_tokenizer(model_location(cfg.tokenizer)), cfg.enable_thinking)
    records, rejected = convert_terminus2(source, chat, cfg.history)
    write_dataset(
        out,
        "sft",
        records,
        f"Terminus-2 traces from {source.name} as SFT samples of our terminus_json protocol.",
        "every trace whose assistant turns all parse under terminus_json",
        [source.name],
        SFT_FIELDS,
    )
    with (out / "rejected.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rejected)
    traces = len({r["episode_id"] for r in records})
    print(
        f"{traces + len(rejected)} traces -> {len(records)} SFT records ({traces} traces); {len(rejected)} "
        f"rejected (rejected.jsonl) -> {out}"
    )


@hydra.main(config_path="../../conf", config_name="datasets", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from terminal_rl.datasets.build import build
    from terminal_rl.datasets.writer import upload

    if chosen_command(cfg.command, COMMANDS) == "convert":
        convert(cfg)
        return
    settings = settings_from(cfg)
    summary = build(settings, step_scorer(cfg) if cfg.prm.enabled else None)
    print(
        f"{summary['episodes']} episodes -> {summary['sft_records']} SFT records ({summary['sft_tasks']} tasks), "
        f"{summary['dpo_pairs']} DPO pairs, {summary['prm_records']} PRM records ({summary['prm_episodes']} episodes); "
        f"{summary['removed']} forged-fixture "
        f"episodes removed (removed.jsonl) -> {summary['out_dir']}"
    )
    if cfg.upload.repo_id:
        upload(settings.out_dir, cfg.upload.repo_id, cfg.upload.private)
        print(f"uploaded to the Hub dataset {cfg.upload.repo_id}")


if __name__ == "__main__":
    main()
