"""The training console's pieces: header, progress and validation lines (pure), the metrics follower,
and the redirect that sends library output to the log file and errors to the console."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.console import (
    MetricsFollower,
    ValidationProgress,
    app_header,
    header_lines,
    step_line,
    task_counts,
    validation_line,
)

SETTINGS = {
    "task_set": {"path": "data/terminal_bench_rl.csv"},
    "model": {"name": "qwen3_32b"},
    "hardware": {"name": "h100_4x8", "nodes": 4, "gpus_per_node": 8, "device": "cuda"},
    "reward_mix": {"weights": {"tests": 0.65, "judge": 0.35}},
    "curriculum": {
        "kind": "staged",
        "stages": [
            {"name": "process", "judge_weights": {"easy": 0.5, "hard": 0.1}},
            {"name": "tests_only", "judge_weights": {"hard": 0.0}},
        ],
    },
    "data_filter": {"kind": "online_variance"},
}


def test_the_header_names_what_trains_on_what():
    counts = {"train": {"easy": 10, "medium": 0, "hard": 5}, "val": {"easy": 1, "medium": 0, "hard": 1}}
    lines = header_lines("r1", Path("/runs/r1"), counts, SETTINGS, 1470)
    assert lines[0] == "terminal_rl train  run r1  ->  /runs/r1"
    assert "terminal_bench_rl.csv: train 15 (10 easy / 5 hard), val 2 (1 easy / 1 hard)" in lines[1]
    assert "qwen3_32b on h100_4x8 (4 node(s) x 8 GPU), 1470 steps" in lines[2]
    assert lines[3] == "  algorithm   grpo, full fine-tuning"
    assert "staged (process -> tests_only)   filter online_variance" in lines[5]
    assert lines[4].endswith("tests + judge, the judge's weight set by the curriculum (0.5 in the first stage, 0 last)")
    fixed = header_lines("r1", Path("/runs/r1"), counts, {**SETTINGS, "curriculum": {"kind": "none"}}, 10)
    assert fixed[4].endswith("reward      tests 0.65 + judge 0.35") and fixed[5].endswith(
        "none   filter online_variance"
    )
    lora = header_lines(
        "r1",
        Path("/runs/r1"),
        counts,
        {
            **SETTINGS,
            "model": {"name": "tiny", "lora": {"rank": 8, "alpha": 16}},
            "algorithm": {"adv_estimator": "mt_grpo"},
        },
        10,
    )
    assert lora[3] == "  algorithm   mt_grpo, LoRA rank 8 alpha 16"
    dr = header_lines(
        "r1",
        Path("/runs/r1"),
        counts,
        {**SETTINGS, "algorithm": {"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": False}},
        10,
    )
    assert dr[3] == "  algorithm   grpo (not divided by the group's std), full fine-tuning"


def test_every_app_header_lines_up_its_settings_under_the_run():
    lines = app_header(
        "evaluate",
        "r2",
        Path("/runs/r2"),
        [("tasks", task_counts("/data/set.csv", {"all": {"easy": 2}})), ("policy", "oracle")],
    )
    assert lines == [
        "terminal_rl evaluate  run r2  ->  /runs/r2",
        "  tasks       set.csv: all 2 (2 easy)",
        "  policy      oracle",
    ]


def test_a_step_line_has_progress_eta_and_the_step_figures():
    data = {
        "timing_s/step": 61.2,
        "reward/tests_score": 0.4123,
        "reward/pass_rate": 0.25,
        "critic/score/mean": 0.5,
        "reward/weight/judge": 0.35,
        "curriculum/stage": 1.0,
        "rollout/masked_fraction": 0.0,
    }
    line = step_line(3, 10, data, seconds_per_step=60.0)
    assert line.startswith("step 3/10  ETA 7m00s  61 s/step | tests 0.412  pass 0.25  reward 0.500  judge w 0.35")
    assert "stage 1  masked 0.00  filtered -" in line, "a figure the step did not log shows as -"
    assert "ETA 2h00m" in step_line(1, 121, data, 60.0)
    assert "stale" not in line, "sync mode: no staleness to show"
    asynchronous = {
        **data,
        "rollout/in_flight_while_training": 3,
        "training/off_policy/trajectory_staleness_worst/mean": 0.5,
        "training/off_policy/trajectory_staleness_worst/max": 1,
    }
    assert step_line(3, 10, asynchronous, 60.0).endswith("| stale 0.5/1  in flight 3 groups while training")
    assert (
        validation_line(
            2,
            {
                "val-core/tbrl/acc/mean@1": 0.25,
                "val-aux/tbrl/pass/mean@1": 0.0,
                "val-aux/tbrl/stage/mean@1": 2,
                "actor/kl": 1,
            },
        )
        == "  validation @ step 2: tbrl pass rate 0.000  tbrl test score 0.250"
    )
    assert validation_line(1, data) is None


def test_the_follower_reads_each_complete_record_once(tmp_path):
    path, seen = tmp_path / "metrics.jsonl", []
    follower = MetricsFollower(path, lambda step, data: seen.append((step, data)))
    follower.poll()
    path.write_text(json.dumps({"step": 1, "data": {"a": 1}}) + "\n" + '{"step": 2, "da')
    follower.poll()
    assert seen == [(1, {"a": 1})], "a half-written line waits"
    with path.open("a") as out:
        out.write('ta": {"a": 2}}\n')
    follower.poll()
    follower.poll()
    assert seen == [(1, {"a": 1}), (2, {"a": 2})]


def test_validation_shows_its_episodes_as_they_finish_across_workers(tmp_path):
    """The validation before step 1 writes no metrics record for minutes: its progress comes from the
    rollout logs (one file per worker), a line at most every every_sec, and one at the end."""
    shown = []
    progress = ValidationProgress(tmp_path, 4, shown.append, every_sec=3600)
    progress.poll()  # no rollout folder yet
    tmp_path.joinpath("val_step000000.11.jsonl").write_text("{}\n{")  # half a line waits
    progress.poll()
    assert shown == ["  validation @ step 0: 1/4 episodes"]
    with tmp_path.joinpath("val_step000000.11.jsonl").open("a") as out:
        out.write("}\n")
    tmp_path.joinpath("val_step000000.12.jsonl").write_text("{}\n")
    tmp_path.joinpath("train_step000001.12.jsonl").write_text("{}\n" * 9)  # training episodes do not count
    progress.poll()
    assert len(shown) == 1, "not again within every_sec"
    with tmp_path.joinpath("val_step000000.12.jsonl").open("a") as out:
        out.write("{}\n")
    progress.poll()
    progress.poll()
    assert shown[1:] == ["  validation @ step 0: 4/4 episodes"]


def test_a_resumed_runs_earlier_validation_lines_do_not_count(tmp_path):
    earlier = tmp_path / "val_step000000.7.jsonl"
    earlier.write_text("{}\n" * 4)  # the first attempt's validation before step 1
    shown = []
    progress = ValidationProgress(tmp_path, 4, shown.append, every_sec=3600)
    progress.poll()
    assert shown == []
    with earlier.open("a") as out:  # the resumed attempt validates step 0 again
        out.write("{}\n")
    progress.poll()
    assert shown == ["  validation @ step 0: 1/4 episodes"]


def test_library_output_goes_to_the_log_and_an_error_to_the_console(tmp_path):
    log = tmp_path / "train.log"
    script = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from terminal_rl.console import quiet_console
        with quiet_console(Path({str(log)!r}), verbose=False) as console:
            console.print("step 1/2")
            print("{{'actor_rollout_ref': ...}} a config dump")
            os.write(2, b"C-level warning\\n")
            raise RuntimeError("worker died\\nZeroDivisionError: integer division or modulo by zero")
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "step 1/2",
        "error: RuntimeError: ZeroDivisionError: integer division or modulo by zero",
        f"full output and traceback: {log}",
    ]
    assert result.stderr == ""
    text = log.read_text()
    assert "a config dump" in text and "C-level warning" in text and "Traceback" in text and "worker died" in text
