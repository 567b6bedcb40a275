"""The benchmarks' own logic and short runs, so they cannot rot between their long runs. The learning proof:
held-out curves read from a run's metrics as verl logs them, the targets judged per seed, the plot."""

import importlib.util
import json

import pandas as pd
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
    assert learning_proof.summary(arms[2:], [1]) == {"seeds_pending": [1], "async_shortfall": {}, "async_met": {}}


def test_the_async_arm_is_judged_against_its_seeds_treatment_and_is_not_a_claim_arm():
    arms = [
        arm(0, "treatment", {0: 0.3, 20: 0.9}),
        arm(0, "control", {0: 0.3, 20: 0.3}),
        arm(0, "async", {0: 0.3, 20: 0.85}),
        arm(1, "treatment", {0: 0.3, 20: 0.9}),
        arm(1, "control", {0: 0.3, 20: 0.3}),
        arm(1, "async", {0: 0.3, 20: 0.7}),
    ]
    summary = learning_proof.summary(arms, [0, 1])
    assert summary["seeds_pending"] == [] and summary["post_sft_pass_rate"] == {"0": 0.3, "1": 0.3}
    assert summary["async_shortfall"] == {"0": pytest.approx(0.05), "1": pytest.approx(0.2)}
    assert summary["async_met"] == {"0": True, "1": False}, "within 10 points of the treatment's gain"
    assert learning_proof.summary([a for a in arms if a["arm"] != "async"], [0, 1])["met"]["mean_gain"] is True


def test_each_seed_draws_its_own_warm_start_and_task_draws():
    assert learning_proof.seed_overrides(2) == ["warm_start.seed=2", "task_set.split_seed=2"]
    cfg = learning_proof.experiment(PROJECT_ROOT / "outputs", learning_proof.seed_overrides(2))
    assert cfg.model.path == str(PROJECT_ROOT / "outputs" / "learning_proof_sft_s2" / "sft" / "model")


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
    key = learning_proof.fingerprint([], 20)
    assert key == learning_proof.fingerprint(learning_proof.ARMS["treatment"], 20)
    assert key != learning_proof.fingerprint(learning_proof.ARMS["control"], 20)  # algorithm=grpo_shuffled is in it
    assert key != learning_proof.fingerprint(learning_proof.ARMS["async"], 20)  # rollouts=async is in it
    assert key != learning_proof.fingerprint([], 10)
    assert key != learning_proof.fingerprint(["actor_rollout_ref.actor.optim.lr=1e-4"], 20)
    assert key != learning_proof.fingerprint([], 20, "learning_proof_multiturn")


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


def test_the_reproducing_commands_group_seeds_by_their_arms():
    arms = [{"seed": 1, "arm": "control"}, {"seed": 0, "arm": "async"}, {"seed": 2, "arm": "treatment"}]
    arms += [{"seed": s, "arm": a} for s in (0, 2) for a in ("treatment", "control") if (s, a) != (2, "treatment")]
    arms += [{"seed": 1, "arm": "treatment"}]
    assert learning_proof.reproducing_commands(arms, 20, ["x=1"]) == [
        "benchmarks/learning_proof.py --seeds 0 --arms treatment control async --steps 20 x=1",
        "benchmarks/learning_proof.py --seeds 1 2 --arms treatment control --steps 20 x=1",
    ]


def test_the_committed_figures_were_made_under_todays_settings():
    """benchmarks/results/learning_proof.json describes conf/ as it is: a change to the learning proof's
    composed settings fails here until the benchmark is rerun (it resumes, keeping what still holds)."""
    report = json.loads((learning_proof.RESULTS / "learning_proof.json").read_text())
    for arm, key in report["fingerprints"].items():
        assert learning_proof.fingerprint(learning_proof.ARMS[arm], 20) == key, (
            f"the {arm} arm's settings changed since benchmarks/results/learning_proof.json was made: "
            "rerun .venv/bin/python benchmarks/learning_proof.py"
        )
    made = set()
    for command in report["commands"]:
        words = command.split()
        steps = words.index("--steps")
        arms_at = words.index("--arms")
        seeds = [int(w) for w in words[words.index("--seeds") + 1 : arms_at]]
        arms = words[arms_at + 1 : steps]
        assert words[0] == "benchmarks/learning_proof.py" and words[steps + 1 :] == ["20"]
        assert set(learning_proof.CLAIM_ARMS) <= set(arms) <= set(learning_proof.ARMS)
        made |= {(s, a) for s in seeds for a in arms}
    assert {(a["seed"], a["arm"]) for a in report["arms"]} == made, "the commands make every arm, and only those"
    for seed in {a["seed"] for a in report["arms"]}:
        digests = {a["warm_start_weights_sha256"] for a in report["arms"] if a["seed"] == seed}
        assert len(digests) == 1, f"seed {seed}'s arms start from one warm start"
    for change in report["rekeyed"]:
        assert change["why"] and set(change["from"]) == set(change["to"]), "a rekey says why"


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


multiturn_spec = importlib.util.spec_from_file_location(
    "learning_proof_multiturn", PROJECT_ROOT / "benchmarks" / "learning_proof_multiturn.py"
)
multiturn = importlib.util.module_from_spec(multiturn_spec)
multiturn_spec.loader.exec_module(multiturn)


def raw_arm(root, run, arm, curve, minutes=20.0, margin=(-3.0, -1.0), resumed_from_step=0):
    """One arm's raw files as run_arm writes them: metrics as verl logs them, validation episodes."""
    raw = root / f"{run}_{arm}"
    (raw / "logs").mkdir(parents=True)
    metrics = [{"step": s, "data": {"val-aux/inbox_value/pass/mean@4": v}} for s, v in curve.items()]
    metrics += [{"step": s, "data": {"actor/kl_loss": 0.01 * s, "advantage/abs_mean": 0.5}} for s in (1, 2)]
    (raw / "logs" / "metrics.raw.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    episodes = [
        {"step": 0, "task_id": "h1", "level": "hard", "score": 0.4},
        {"step": 0, "task_id": "e1", "level": "easy", "score": 1.0},
    ]
    (raw / "validation.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    (raw / "margins.json").write_text(json.dumps({"0": margin[0], "20": margin[1]}))
    level = {"pass_rate": 0.5, "able": 1.0, "episodes": 40}
    (raw / "greedy.json").write_text(json.dumps({"0": {"easy": level, "hard": dict(level, pass_rate=0.0)}}))
    record = {"run": run, "arm": arm, "fingerprint": "f", "minutes": minutes, "sft_seed": 0, "rl_seed": 0}
    record |= {"resumed_from_step": resumed_from_step, "benchmark_command": f"learning_proof_multiturn.py {arm}"}
    record["warm_start_weights"] = "w0"
    (raw / "arm.json").write_text(json.dumps(record))
    return raw


def test_a_second_rung_arm_is_read_from_its_raw_files_alone(tmp_path):
    raw = raw_arm(tmp_path, "sft0_rl0", "grpo", {0: 0.25, 10: 0.4, 20: 0.5})
    figures = multiturn.arm_figures(raw)
    assert figures["sampled_pass_at_1"] == {0: 0.25, 10: 0.4, 20: 0.5} and figures["change"] == pytest.approx(0.25)
    assert figures["sampled_by_level"] == {0: {"easy": 1.0, "hard": 0.0}}, "passed: every test, score 1"
    assert figures["greedy_pass_rate"] == {0: 0.25} and figures["greedy_by_level"][0] == {"easy": 0.5, "hard": 0.0}
    assert figures["folder_step_margin"] == {0: -3.0, 20: -1.0}
    assert figures["diagnostics"] == {"kl": pytest.approx(0.015), "abs_advantage": 0.5}


def test_the_second_rungs_targets_need_every_arm_of_a_run(tmp_path):
    curves = {
        "grpo": {0: 0.3, 20: 0.5},
        "mt_grpo": {0: 0.3, 20: 0.55},
        "shuffled": {0: 0.3, 20: 0.32},
        "negated": {0: 0.3, 20: 0.1},
    }
    for arm, curve in curves.items():
        raw_arm(tmp_path, "sft0_rl0", arm, curve)
    raw_arm(tmp_path, "sft0_rl1", "grpo", {0: 0.3, 20: 0.2})
    report = multiturn.rebuild(tmp_path.parent / tmp_path.name)
    summary = report["summary"]
    assert report["commands"] == [f"learning_proof_multiturn.py {arm}" for arm in sorted(curves)], "each arm's own"
    assert summary["runs_done"] == ["sft0_rl0"] and summary["runs_pending"] == ["sft0_rl1"]
    assert summary["change_over_runs"]["grpo"]["mean"] == pytest.approx(0.2)
    assert summary["minutes_per_run"] == {"sft0_rl0": 80.0}
    assert summary["met"] == {
        "grpo_mean_gain": True,
        "grpo_every_run_positive": True,
        "mt_grpo_at_least_grpo": True,
        "shuffled_flat_mean": True,
        "shuffled_flat_every_run": True,
        "negated_falls_every_run": True,
        "minutes_per_run": True,
    }
    assert json.loads(tmp_path.with_suffix(".json").read_text()) == json.loads(json.dumps(report))
    assert Image.open(tmp_path.with_suffix(".png")).size[0] > 800, "two panels: pass rate and margin"


def test_a_runs_change_has_a_paired_bootstrap_interval_over_its_held_out_tasks():
    """Per task, its samples' pass rate at the last step minus at the first; tasks resampled in pairs.
    Task i passes i of 4 samples at step 0 and i + 1 at step 20: every task gains 0.25, so the paired
    interval is a point, where one resampling the steps apart would spread."""
    episodes = [{"step": 0, "task_id": f"t{i}", "score": float(j < i)} for i in range(4) for j in range(4)]
    episodes += [{"step": 20, "task_id": f"t{i}", "score": float(j <= i)} for i in range(4) for j in range(4)]
    episodes += [{"step": 20, "task_id": "t9", "score": 1.0}, {"step": 10, "task_id": "t0", "score": 0.0}]
    assert multiturn.change_interval(episodes, 0, 20) == [0.25, 0.25], "t9 was not played at step 0: left out"
    halves = [e | {"score": 1.0 if e["step"] == 20 and e["task_id"] in ("t0", "t1") else 0.0} for e in episodes]
    low, high = multiturn.change_interval(halves, 0, 20)
    assert 0.0 <= low < 0.5 < high <= 1.0, "t0, t1 went 0 -> 1, t2, t3 stayed: mean 0.5"
    assert multiturn.change_interval(halves, 0, 20) == [low, high], "fixed draws: a rebuild gives the same"
    assert multiturn.change_interval(episodes, 0, 30) is None


def test_the_run_level_tests_take_runs_as_the_unit():
    """Exact one-sided sign-flip p over runs: with four runs all in favour, 1/16; one against, more."""
    assert multiturn.sign_flip_p([0.2, 0.1, 0.3, 0.15]) == 1 / 16
    assert multiturn.sign_flip_p([0.2, 0.1, 0.3, -0.15]) == 3 / 16, "+-+-... patterns at least 0.45: 3 of 16"
    assert multiturn.sign_flip_p([-0.2]) == 1.0 and multiturn.sign_flip_p([0.2]) == 0.5
    change = {
        "grpo": {"sft0_rl0": 0.2, "sft1_rl0": 0.1},
        "mt_grpo": {"sft0_rl0": 0.3, "sft1_rl0": 0.0},
        "shuffled": {"sft0_rl0": -0.1, "sft1_rl0": 0.05},
        "negated": {"sft0_rl0": -0.3, "sft1_rl0": -0.2},
    }
    report = multiturn.run_level(change)
    grpo = report["change_over_runs"]["grpo"]
    assert grpo == {"mean": pytest.approx(0.15), "sd": pytest.approx(0.0707, abs=1e-4), "min": 0.1, "max": 0.2}
    versus = report["tests"]["grpo_vs_shuffled"]
    assert versus["per_run"] == {"sft0_rl0": pytest.approx(0.3), "sft1_rl0": pytest.approx(0.05)}
    assert versus["mean"] == pytest.approx(0.175) and versus["p_sign_flip"] == 0.25
    assert versus["p_least_possible"] == 0.25, "two runs"
    over_target = report["tests"]["grpo_gain_over_target"]
    assert over_target["per_run"] == {"sft0_rl0": pytest.approx(0.05), "sft1_rl0": pytest.approx(-0.05)}
    assert report["tests"]["mt_grpo_vs_grpo"]["p_sign_flip"] == 0.75, "+0.1 and -0.1: 3 of 4 patterns reach their 0"


def test_the_control_is_judged_on_its_mean_over_runs_and_on_every_run(tmp_path):
    """The issue's "control within ±5 points" is read both ways: two runs drifting +8 and -6 are flat on
    average (+1) but not in every run."""
    for run, drift in (("sft0_rl0", 0.08), ("sft1_rl0", -0.06)):
        for arm, end in {"grpo": 0.5, "mt_grpo": 0.55, "shuffled": 0.3 + drift, "negated": 0.1}.items():
            raw_arm(tmp_path, run, arm, {0: 0.3, 20: end})
    met = multiturn.rebuild(tmp_path.parent / tmp_path.name)["summary"]["met"]
    assert met["shuffled_flat_mean"] and not met["shuffled_flat_every_run"]


def test_a_warm_start_leaving_the_folder_step_out_of_reach_stops_the_benchmark():
    multiturn.reachable(-3.9, -4.0, "sft0_rl0")
    for log_prob, rate in ((-13.1, "4.89e\\+05"), (-5000.0, "1.01e\\+304"), (float("nan"), "nan")):
        with pytest.raises(SystemExit, match=rf"sft0_rl0: .* below --min-log-prob -4: about once in {rate} hard"):
            multiturn.reachable(log_prob, -4.0, "sft0_rl0")


def test_decisions_are_kept_for_their_held_out_tasks_and_played_again_for_others(tmp_path, monkeypatch):
    """The folder step's decisions are played once per warm start and kept; a held-out set changed
    since (another count, or a family whose code changed) has other hard tasks, so the kept episodes
    are not its decisions."""
    from terminal_rl.agent import tokens
    from terminal_rl.agent.trajectory import Trajectory
    from terminal_rl.training import warm_start

    cfg = multiturn.config(tmp_path, ["task_set.procedural.count=12", "task_set.validation.procedural.count=6"])
    plan, val = multiturn.held_out(cfg)
    hard = [t for t in val if t.difficulty.value == "hard"]
    replayed = ("played", [f"task_ids=[{','.join(t.id for t in hard)}]"])

    class Stop(Exception):
        pass

    def play(app, overrides, run_dir):
        raise Stop("played", [o for o in overrides if o.startswith("task_ids=")])

    monkeypatch.setattr(warm_start, "run_app", play)
    monkeypatch.setattr(tokens, "load_tokenizer", lambda path: (_ for _ in ()).throw(Stop("kept")))
    results = tmp_path / "decisions" / "results.jsonl"
    for versions, outcome in (
        ([(t.id, t.content_hash) for t in hard], ("kept",)),
        ([(t.id, "a hash of the family's old code") for t in hard], replayed),
        ([("inbox_value-s1-00099", "h")], replayed),
    ):
        results.parent.mkdir(exist_ok=True)
        results.write_text(
            "".join(Trajectory(i, h, "p", "x", termination="finished").to_json() + "\n" for i, h in versions)
        )
        with pytest.raises(Stop) as stopped:
            multiturn.decisions_for(cfg, plan, val, tmp_path)
        assert stopped.value.args == outcome and results.exists() == (outcome == ("kept",))


def test_the_margins_are_measured_on_every_kept_checkpoint(tmp_path):
    for name in ("global_step_20", "global_step_10", "global_step_tmp", "latest_checkpointed_iteration.txt"):
        (tmp_path / "checkpoints" / name).mkdir(parents=True)
    assert multiturn.saved_steps(tmp_path) == [10, 20]


def test_later_arms_of_a_run_take_step_zero_from_a_finished_arm_on_the_same_warm_start(tmp_path):
    """Every arm of a run starts from the same warm start on the same held-out tasks: one step-0
    validation serves them all, never one played by other weights."""
    keys = dict.fromkeys(multiturn.ARMS, "f")
    assert multiturn.step_zero_arm(tmp_path, "sft0_rl0", "mt_grpo", "w0", keys) is None, "the first arm validates"
    first = raw_arm(tmp_path, "sft0_rl0", "grpo", {0: 0.25, 20: 0.5})
    assert multiturn.step_zero_arm(tmp_path, "sft0_rl0", "mt_grpo", "w0", keys) == first
    assert multiturn.step_zero_arm(tmp_path, "sft0_rl0", "grpo", "w0", keys) is None, "not its own"
    assert multiturn.step_zero_arm(tmp_path, "sft0_rl0", "mt_grpo", "w1", keys) is None, "another warm start"
    assert multiturn.step_zero_arm(tmp_path, "sft1_rl0", "mt_grpo", "w0", keys) is None, "another run"
    other_settings = keys | {"grpo": "g"}
    assert multiturn.step_zero_arm(tmp_path, "sft0_rl0", "mt_grpo", "w0", other_settings) is None, "other settings"
    own = pd.DataFrame({"val-aux/inbox_value/pass/mean@4": [0.6]}, index=pd.Index([20], name="step"))
    played = [{"step": 20, "task_id": "h1", "level": "hard", "score": 1.0}]
    metrics, episodes = multiturn.with_step_zero_of(first, own, played)
    assert multiturn.sampled_curve(metrics) == {0: 0.25, 20: 0.6}
    assert [(e["step"], e["task_id"]) for e in episodes] == [(0, "h1"), (0, "e1"), (20, "h1")]


def test_a_run_with_an_arm_resumed_across_sittings_has_no_time(tmp_path):
    """A resumed arm's minutes are its last sitting's: summed, they would understate the run's time."""
    for arm in multiturn.ARMS:
        raw_arm(tmp_path, "sft0_rl0", arm, {0: 0.3, 20: 0.5}, resumed_from_step=10 if arm == "grpo" else 0)
    summary = multiturn.rebuild(tmp_path.parent / tmp_path.name)["summary"]
    assert summary["runs_done"] == ["sft0_rl0"]
    assert summary["minutes_per_run"] == {} and summary["met"]["minutes_per_run"] is None
    assert summary["runs_untimed_resumed"] == ["sft0_rl0"]


@pytest.mark.docker
@pytest.mark.verl
@pytest.mark.timeout(1800)
def test_the_second_rung_benchmark_runs_an_arm_end_to_end(tmp_path):
    """benchmarks/learning_proof_multiturn.py shrunk to a 2-step smoke (one run, the grpo arm, a warm
    start of 12 demonstrations and one epoch), so it cannot rot: the warm start, the played decisions,
    the multi-turn GRPO run with two mini-batches and sampled validation, the merged checkpoint, its
    margins and greedy play, and a report remade from the raw files alone."""
    import subprocess
    import sys

    from tests.support import app_env

    shrink = [
        "task_set.procedural.count=12",
        "task_set.validation.procedural.count=6",
        "warm_start.epochs=1",
        "model_hardware.prompts_per_step=4",
        "model_hardware.rollouts_per_prompt=2",
        "model_hardware.micro_batch_per_gpu=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "trainer.test_freq=2",
        "trainer.save_freq=2",
        # One epoch makes no model the check's ranges accept: it runs, and any figure passes.
        *(f"warm_start.check.{f}.{level}=[0,1]" for f in ("pass_rate", "able") for level in ("easy", "medium", "hard")),
    ]
    out = tmp_path / "report"
    script = [sys.executable, "benchmarks/learning_proof_multiturn.py", "--out", str(out)]
    env = app_env()
    run = [*script, "--output-root", str(tmp_path / "outputs"), "--sft-seeds", "0", "--rl-seeds", "0"]
    run.append("--min-log-prob=-inf")  # a one-epoch model's folder step is far out of reach: the plumbing runs
    result = subprocess.run(
        [*run, "--arms", "grpo", "--steps", "2", *shrink],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=1700,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads(out.with_suffix(".json").read_text())
    [arm] = report["arms"]
    assert (arm["run"], arm["arm"]) == ("sft0_rl0", "grpo") and report["summary"]["runs_pending"] == ["sft0_rl0"]
    assert sorted(arm["sampled_pass_at_1"]) == ["0", "2"] == sorted(arm["folder_step_margin"])
    assert sorted(arm["greedy_pass_rate"]) == ["0", "2"]
    assert all(m < 0 for m in arm["folder_step_margin"].values()), "a one-epoch model prefers <done/>"
    assert {"kl", "grad_norm", "abs_advantage", "clip_fraction"} <= set(arm["diagnostics"])
    assert arm["diagnostics"]["abs_advantage"] >= 0
    episodes = (out / "sft0_rl0_grpo" / "validation.jsonl").read_text().splitlines()
    assert len(episodes) == 2 * 6 * 4, "two validations of 6 held-out tasks, 4 samples each"
    out.with_suffix(".json").unlink()
    rebuilt = subprocess.run([*script, "--rebuild"], cwd=PROJECT_ROOT, capture_output=True, text=True, env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert json.loads(out.with_suffix(".json").read_text())["arms"] == report["arms"], "from the raw files alone"
