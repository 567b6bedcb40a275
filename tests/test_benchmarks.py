"""The benchmarks' own logic and short runs, so they cannot rot between their long runs. The learning proof:
held-out curves read from a run's metrics as verl logs them, the targets judged per seed, the plot."""

import importlib.util
import json

import pytest
from PIL import Image

from terminal_rl.config import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("learning_proof", PROJECT_ROOT / "benchmarks" / "learning_proof.py")
learning_proof = importlib.util.module_from_spec(spec)
spec.loader.exec_module(learning_proof)


def arm(seed, name, curve, minutes=25.0):
    return {
        "seed": seed,
        "arm": name,
        "held_out_pass_rate": curve,
        "held_out_by_level": {},
        "gain": curve[20] - curve[0],
        "minutes": minutes,
    }


def test_held_out_curve_is_verls_validation_pass_rate_by_step(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    records = [
        {"step": 0, "data": {"val-aux/write_value/pass/mean@1": 0.5, "val-core/write_value/acc/mean@1": 0.6}},
        {"step": 1, "data": {"reward/pass_rate": 0.4}},
        {"step": 2, "data": {"val-aux/write_value/pass/mean@1": 0.75}},
    ]
    (logs / "metrics.20261201-000000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert learning_proof.held_out(tmp_path) == {0: 0.5, 2: 0.75}


def test_held_out_pass_rate_by_level_is_read_from_the_validation_rollouts(tmp_path):
    def rollout(task, score):
        return (
            json.dumps(
                {
                    "task_id": task,
                    "termination": "finished",
                    "turns": [],
                    "metadata": {},
                    "verification": {"score": score},
                }
            )
            + "\n"
        )

    rollouts = tmp_path / "logs" / "rollouts"
    rollouts.mkdir(parents=True)
    (rollouts / "val_step000000.9.jsonl").write_text(rollout("e1", 1.0) + rollout("e2", 1.0) + rollout("m1", 0.3))
    (rollouts / "val_step000010.9.jsonl").write_text(rollout("e1", 1.0) + rollout("e2", 0.0) + rollout("m1", 1.0))
    (rollouts / "train_step000001.9.jsonl").write_text(rollout("m1", 0.0))
    levels = {"e1": "easy", "e2": "easy", "m1": "medium"}
    assert learning_proof.held_out_by_level(tmp_path, levels) == {
        0: {"easy": 1.0, "medium": 0.0},
        10: {"easy": 0.5, "medium": 1.0},
    }
    with pytest.raises(ValueError, match=r"validation tasks \['m1'\] are not the experiment's held-out tasks"):
        learning_proof.held_out_by_level(tmp_path, {"e1": "easy", "e2": "easy"})


def test_targets_are_judged_per_seed_and_on_average():
    arms = [
        arm(0, "treatment", {0: 0.5, 20: 0.8}),
        arm(0, "control", {0: 0.5, 20: 0.52}),
        arm(1, "treatment", {0: 0.5, 20: 0.6}),
        arm(1, "control", {0: 0.5, 20: 0.44}, minutes=40),
    ]
    summary = learning_proof.summary(arms, [0, 1])
    assert summary["mean_treatment_gain"] == pytest.approx(0.2)
    assert summary["treatment_gain"] == {"0": pytest.approx(0.3), "1": pytest.approx(0.1)}
    assert summary["minutes_per_seed"] == {"0": 50.0, "1": 65.0} and summary["minutes_all_seeds"] == 115.0
    assert summary["met"] == {
        "mean_gain": True,
        "every_seed_gain": False,
        "control_flat": False,
        "minutes_per_seed": False,
        "minutes_all_seeds": True,
    }
    slow = [dict(a, minutes=95.0) for a in arms]
    assert learning_proof.summary(slow, [0, 1])["met"]["minutes_all_seeds"] is False  # 380 min > 3 h


def test_targets_wait_for_every_seed_and_judge_the_finished_ones():
    arms = [
        arm(0, "treatment", {0: 0.5, 20: 0.8}),
        arm(0, "control", {0: 0.5, 20: 0.52}),
        arm(1, "treatment", {0: 0.5, 20: 0.6}),
    ]
    summary = learning_proof.summary(arms, [0, 1, 2])
    assert summary["seeds_pending"] == [1, 2] and summary["met"] is None
    assert summary["treatment_gain"] == {"0": pytest.approx(0.3)}
    assert learning_proof.summary(arms[2:], [1]) == {"seeds_pending": [1]}


def test_a_later_sitting_keeps_the_arms_of_its_settings_and_the_others_as_superseded():
    keys = {"treatment": "abc", "control": "def"}
    assert learning_proof.recorded_arms({}, keys) == ({}, [])
    old = dict(arm(0, "control", {0: 0.5, 20: 0.5}), fingerprint="old")
    report = json.loads(
        json.dumps(
            {
                "arms": [
                    dict(arm(0, "treatment", {0: 0.5, 20: 0.8}), fingerprint="abc"),
                    old,
                    dict(arm(1, "control", {0: 0.5, 20: 0.5}), fingerprint="abc"),
                ],
                "superseded": [{"seed": 9}],
            }
        )
    )
    kept, superseded = learning_proof.recorded_arms(report, keys)
    assert list(kept) == [(0, "treatment")]  # seed 1's control ran under the treatment's settings
    assert kept[0, "treatment"]["held_out_pass_rate"] == {0: 0.5, 20: 0.8}  # step numbers again, not strings
    assert [a.get("fingerprint") for a in superseded] == [None, "old", "abc"]  # nothing recorded is dropped


def test_rerun_sets_aside_only_the_chosen_recorded_arms():
    kept = {(0, "treatment"): {"minutes": 82.0}, (0, "control"): {"minutes": 81.0}, (2, "treatment"): {"minutes": 22.0}}
    chosen = [(0, "treatment"), (1, "treatment")]
    assert learning_proof.set_aside(dict(kept), chosen, rerun=False) == []
    assert learning_proof.set_aside(kept, chosen, rerun=True) == [{"minutes": 82.0}]
    assert list(kept) == [(0, "control"), (2, "treatment")]  # not chosen: kept


def test_a_recorded_arm_from_another_warm_start_is_rerun_with_its_partner():
    kept = {
        (0, "treatment"): {"warm_start_weights_sha256": "aaa"},
        (1, "treatment"): {"warm_start_weights_sha256": "bbb"},
        (2, "treatment"): {"warm_start_weights_sha256": "aaa"},
    }
    assert learning_proof.unpaired(kept, {1, 2}, "aaa") == [(1, "treatment")]  # seed 0 runs nothing now


def test_the_fingerprint_follows_each_arms_settings():
    key = learning_proof.fingerprint("treatment", [], 20)
    assert key == learning_proof.fingerprint("treatment", [], 20)
    assert key != learning_proof.fingerprint("control", [], 20)  # algorithm=grpo_shuffled is in it
    assert key != learning_proof.fingerprint("treatment", [], 10)
    assert key != learning_proof.fingerprint("treatment", ["actor_rollout_ref.actor.optim.lr=3e-4"], 20)


def test_a_run_directory_of_other_settings_is_refused_not_resumed(tmp_path):
    run_dir = tmp_path / learning_proof.run_id(0, "control")
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "benchmark_fingerprint").write_text("old")
    with pytest.raises(SystemExit, match="holds a run under other settings"):
        learning_proof.run_arm(0, "control", 20, tmp_path, [], {}, "new", "aaa")


def test_plot_has_one_line_per_seed_and_arm(tmp_path):
    arms = [arm(0, "treatment", {0: 0.5, 10: 0.6, 20: 0.8}), arm(0, "control", {0: 0.5, 10: 0.5, 20: 0.52})]
    import matplotlib.pyplot as plt

    learning_proof.plot(arms, tmp_path / "proof.png")
    lines = plt.gcf().axes[0].get_lines()
    assert [(line.get_label(), line.get_linestyle(), list(line.get_ydata())) for line in lines] == [
        ("seed 0 treatment", "-", [0.5, 0.6, 0.8]),
        ("seed 0 control", "--", [0.5, 0.5, 0.52]),
    ]
    plt.close("all")
    image = Image.open(tmp_path / "proof.png")
    assert image.size[0] > 400 and len(image.getcolors(1 << 16) or []) > 10


def test_the_committed_figures_were_made_under_todays_settings():
    """benchmarks/results/learning_proof.json describes conf/ as it is: a change to the learning proof's
    composed settings fails here until the benchmark is rerun (it resumes, keeping what still holds)."""
    report = json.loads((learning_proof.RESULTS / "learning_proof.json").read_text())
    for arm, key in report["fingerprints"].items():
        assert learning_proof.fingerprint(arm, [], 20) == key, (
            f"the {arm} arm's settings changed since benchmarks/results/learning_proof.json was made: "
            "rerun .venv/bin/python benchmarks/learning_proof.py"
        )
    assert report["command"] == "benchmarks/learning_proof.py --seeds 0 1 2 --steps 20"
    assert {(a["seed"], a["arm"]) for a in report["arms"]} == {(s, a) for s in (0, 1, 2) for a in learning_proof.ARMS}


def test_the_readme_table_is_the_committed_json():
    """README.md's learning-proof table: one row per recorded arm, its figures as in the JSON."""
    report = json.loads((learning_proof.RESULTS / "learning_proof.json").read_text())
    readme = (PROJECT_ROOT / "README.md").read_text()
    table = readme.split("## Learning proof", 1)[1].split("| seed | arm |", 1)[1].split("\n\n", 1)[0]
    rows = [[cell.strip(" *") for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    expected = [
        [
            str(a["seed"]),
            a["arm"],
            *(f"{a['held_out_pass_rate'][s]:.3f}" for s in ("0", "10", "20")),
            f"{100 * a['gain']:+.1f}".replace("+0.0", "0.0"),
            f"{a['minutes']:.1f}",
        ]
        for a in report["arms"]
    ]
    assert rows == expected


@pytest.mark.docker
def test_the_verifier_time_benchmark_runs_and_verifies_the_honest_solution(tasks):
    """A short run of benchmarks/verifier_time.py (one repeat), so it cannot rot."""
    import asyncio

    spec = importlib.util.spec_from_file_location("verifier_time", PROJECT_ROOT / "benchmarks" / "verifier_time.py")
    verifier_time = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verifier_time)
    hardened, bare, scores = asyncio.run(verifier_time.measure(tasks["csv-file-parsing-amount-sum"], 1))
    assert scores == [1.0] and len(hardened) == len(bare) == 1 and hardened[0] > 0 < bare[0]
