"""launcher=slurm against a real Slurm (slurmctld + two slurmd on this machine, started by
scripts/start_slurm.sh): a two-node CPU training job signalled as before a time limit (it saves the
step it is in, requeues itself and resumes there), a --multirun sweep (one job per point), scancel with sandboxes up,
an evaluation job, and the
plain sbatch scripts."""

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.launch.epilog import job_processes
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import free_port, served_overrides

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

CPU_RUN = ["hardware=cpu", "model=tiny", "task_set=tbrl_smoke", "logger=console", "launcher=slurm"]
# The training job of the two-node test: the learning proof's small model and tasks, whose steps take
# seconds (the launcher is under test here, not the model).
LEARNER_RUN = [
    "hardware=cpu",
    "model=tiny_learner",
    "task_set=write_value",
    "agent=bash_only",
    "logger=console",
    "launcher=slurm",
    "task_set.procedural.count=30",
    "model_hardware.prompts_per_step=2",
    "model_hardware.rollouts_per_prompt=2",
    "model_hardware.micro_batch_per_gpu=1",
    "agent.max_turns=2",
    "++data.apply_chat_template_kwargs.enable_thinking=false",
]
PODMAN = "unix:///run/podman/podman.sock"
SUBMITTED: list[int] = []  # cancelled after each test, so a failed test leaves no job competing for the CPUs


def train(*overrides, multirun=False, app="train", env: dict[str, str] | None = None):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN"))}, **(env or {})}
    command = [sys.executable, "-m", f"terminal_rl.{app}", *(["--multirun"] if multirun else []), *overrides]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = [int(j) for j in re.findall(r"submitted Slurm job (\d+)", result.stdout)]
    SUBMITTED.extend(jobs)
    return jobs, result.stdout


def state(job: int) -> str:
    out = subprocess.run(["sacct", "-j", str(job), "-X", "-n", "-o", "State"], capture_output=True, text=True).stdout
    if out.strip():
        return out.split()[0]
    queue = subprocess.run(["squeue", "-h", "-j", str(job), "-o", "%T"], capture_output=True, text=True).stdout.strip()
    return queue or "UNKNOWN"


def wait(job: int, timeout: float = 900, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL")) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = state(job)
        if current.startswith(until) or (
            current == "UNKNOWN"
            and not subprocess.run(["squeue", "-h", "-j", str(job)], capture_output=True, text=True).stdout.strip()
        ):
            return current
        time.sleep(3)
    subprocess.run(["scancel", str(job)])
    raise AssertionError(f"job {job} did not finish in {timeout}s (state {state(job)})")


def finished(log_dir, job: int) -> str:
    """submitit's own record of how the job body ended, from its log."""
    return (log_dir / "slurm" / f"{job}_0_log.out").read_text()


@pytest.fixture(scope="module", autouse=True)
def slurm_up():
    subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "start_slurm.sh")], check=True, capture_output=True)


@pytest.fixture(autouse=True)
def cancel_leftover_jobs():
    yield
    if SUBMITTED:
        subprocess.run(["scancel", *map(str, SUBMITTED)], capture_output=True)
        SUBMITTED.clear()


def release_requeued(job: int, timeout: float = 120) -> None:
    """Slurm holds a requeued job back a while (BeginTime); release it once it is pending again (a
    two-node job takes a few seconds to get there, and an earlier update is lost)."""

    def queued() -> str:
        return subprocess.run(
            ["squeue", "-h", "-j", str(job), "-o", "%T"], capture_output=True, text=True
        ).stdout.strip()

    deadline = time.monotonic() + timeout
    seen_pending = False
    while time.monotonic() < deadline:
        current = queued()
        if current == "PENDING":
            seen_pending = True
            subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], capture_output=True)
        elif seen_pending:
            return
        time.sleep(2)
    raise AssertionError(f"requeued job {job} never started again (state {queued() or state(job)})")


@pytest.fixture(scope="module")
def requeued_two_node_job(tmp_path_factory):
    """One training job on two Slurm nodes (rank 0 starts the Ray head, rank 1 joins), node2's
    sandboxes on podman and node1's on dockerd (the cluster's task prolog), so each node's images are
    its own, as on a real cluster; signalled as Slurm signals a job before its time limit (USR2, to
    every process of its steps) during step 1, with no periodic checkpoint before step 2: the trainer
    must save step 1 on the signal, the job requeue itself and resume there, and finish step 2 on both
    nodes. Shared by the tests below (one training job instead of three)."""
    root = tmp_path_factory.mktemp("slurm-train")
    from terminal_rl.sandbox.images.images import TASK_LABEL

    podman = docker_client(PODMAN)  # node2 starts without the task images: its preparation must build them
    for image in podman.images.list(filters={"label": TASK_LABEL}):
        if image.labels[TASK_LABEL].startswith("write_value"):
            podman.api.remove_image(image.id, force=True)
    submitted = time.time()
    [job], stdout = train(
        *LEARNER_RUN,
        "hardware.nodes=2",
        "trainer.total_training_steps=2",
        "trainer.save_freq=100",
        "launcher.signal_delay_s=600",
        "trainer.test_freq=-1",
        "run.id=sl-train",
        f"run.output_root={root}",
        env={"TERMINAL_RL_TEST_NODE_ENGINES": f"node2={PODMAN}"},
    )
    run_dir = root / "sl-train"
    # Generous: beside the other test worker a loaded CI machine took over 600 s to get here.
    deadline = time.monotonic() + 1200
    while not list((run_dir / "logs" / "rollouts").glob("train_step000001.*")):  # step 1 is under way
        assert time.monotonic() < deadline, state(job)
        time.sleep(1)
    subprocess.run(["scancel", "--signal=USR2", str(job)], check=True)
    latest = run_dir / "checkpoints" / "latest_checkpointed_iteration.txt"
    while not (latest.is_file() and latest.read_text().strip() == "1"):
        assert time.monotonic() < deadline, f"no checkpoint of step 1 after the signal ({state(job)})"
        time.sleep(1)
    release_requeued(job)
    wait(job, timeout=900)
    return {"job": job, "stdout": stdout, "logs": run_dir / "logs", "submitted": submitted}


def test_two_node_cpu_training_job_runs_through_launcher_slurm(requeued_two_node_job):
    """The step trains on both nodes: the head saw two Ray nodes, the actor workers ran on both."""
    job, logs = requeued_two_node_job["job"], requeued_two_node_job["logs"]
    assert str(logs / "slurm" / f"{job}_0_log.out") in requeued_two_node_job["stdout"], "the CLI says where the logs go"
    head, worker = ((logs / "slurm" / f"{job}_{rank}_log.out").read_text() for rank in (0, 1))
    assert "Job completed successfully" in head and "Job completed successfully" in worker
    nodes = re.search(r"Ray cluster has 2 nodes:\n  (\w+) at .*\n  (\w+) at ", head)
    assert nodes and nodes[1] != nodes[2], "the head saw itself and the worker as two Ray nodes"
    assert "node rank 1 joined the Ray head" in worker
    assert re.search(r"ray/actor_nodes:2\b", (logs / "train.log").read_text()), "the actor workers ran on both nodes"


def test_requeued_job_resumes_from_its_checkpoint(requeued_two_node_job):
    logs, job = requeued_two_node_job["logs"], requeued_two_node_job["job"]
    head = finished(logs, job)
    assert "Job completed successfully" in head
    assert "requeue: the trainer saved step 1" in (logs / "train.log").read_text(), (
        "the checkpoint was the save on Slurm's signal, not a periodic one"
    )
    assert "step 2/2" in head, "the requeued job's console: it resumed and finished step 2"
    launches = [
        [json.loads(line)["step"] for line in path.read_text().splitlines()]
        for path in sorted(logs.glob("metrics.*.jsonl"))
    ]
    assert launches[-1] == [2] and sum(launches, []).count(1) <= 1, (
        f"the last launch started from the step-1 checkpoint and ran step 2 only: {launches}"
    )


def test_every_node_builds_the_first_task_images_on_its_own_engine_before_step_1(requeued_two_node_job):
    """The head builds the images of the validation rows and first draws, then every other node builds
    the same ones on its own engine, reports them, and only then does step 1 start (before, a node
    other than the head built inside its step-1 rollouts, or failed for a missing base image)."""
    from terminal_rl.sandbox.images.images import TASK_LABEL

    job, logs = requeued_two_node_job["job"], requeued_two_node_job["logs"]
    first = json.loads((logs / "slurm" / f"{job}.attempt0.first_images.json").read_text())
    report = logs / "slurm" / f"{job}.attempt0.rank1.images"
    assert first and json.loads(report.read_text()) == {"built": first, "failed": {}}
    podman = docker_client(PODMAN)
    # The family's tasks share one image (the same build inputs), labelled with the task that built it.
    built = [i for i in podman.images.list(filters={"label": TASK_LABEL}) if i.labels[TASK_LABEL] in first]
    assert built, "node2's engine (podman) has the first tasks' image"
    for image in built:
        created = datetime.fromisoformat(image.attrs["Created"]).timestamp()
        assert requeued_two_node_job["submitted"] - 1 <= created <= report.stat().st_mtime + 1, (
            "node2 built it in this job, before it reported itself ready"
        )
    attempts = finished(logs, job).split("Starting with JobEnvironment")[1:]  # the signalled one, the requeued one
    assert len(attempts) == 2 and all("all 2 nodes prepared" in a for a in attempts)
    assert all(a.index("all 2 nodes prepared") < a.index("\nstep ") for a in attempts if "\nstep " in a), (
        "each attempt's first step waited for every node"
    )


def test_multirun_sweep_submits_one_job_per_point(tmp_path):
    """The curriculum comparison sweep (conf/sweep/), as preflight-only jobs to keep CI short."""
    jobs, stdout = train(
        *CPU_RUN,
        "launcher.preflight_only=true",
        "sweep=curriculum_comparison",
        "judge.api_key_env=",
        f"run.output_root={tmp_path}",
        multirun=True,
    )
    assert len(jobs) == 3 and len(set(jobs)) == 3
    for kind in ("none", "difficulty_linear", "judge_anneal"):
        assert f"curriculum={kind}" in stdout
    assert list(tmp_path.glob("multirun/*/multirun.yaml")), "Hydra's sweep record is under run.output_root"
    for number, job in enumerate(jobs):
        wait(job, timeout=300)
        [run_dir] = tmp_path.glob(f"curriculum_comparison-{number}-*")
        assert "Job completed successfully" in finished(run_dir / "logs", job)


def test_scancel_leaves_no_sandbox_behind(tmp_path):
    """Cancelled with sandboxes up: the job's trap or, if srun killed it first, the epilog removes them,
    and none of the job's processes outlive it. An evaluation job whose policy sleeps in its sandbox
    has one up within seconds (a training job takes minutes to get there; the Ray node's own lifetime
    is tests/launch/test_ray_node_lifetime.py)."""
    script = tmp_path / "sleep.json"
    script.write_text(json.dumps(["<bash>\ncmd: sleep 600\ntimeout_secs: 600\n</bash>"]))
    [job], _ = train(
        "launcher=slurm",
        "hardware=cpu",
        "task_set=tbrl_smoke",
        "task_ids=[csv-file-parsing-amount-sum]",
        "policy=scripted",
        f"policy.script={script}",
        "run.id=sl-cancel",
        f"run.output_root={tmp_path}",
        app="evaluate",
    )
    client = docker_client()
    ours = {"label": [f"{MANAGED}=1", f"{RUN_ID}=sl-cancel"]}
    deadline = time.monotonic() + 300
    while not client.containers.list(all=True, filters=ours, ignore_removed=True):
        assert time.monotonic() < deadline and state(job) in ("PENDING", "RUNNING", "UNKNOWN"), state(job)
        time.sleep(1)
    subprocess.run(["scancel", str(job)], check=True)
    wait(job, timeout=120)
    time.sleep(5)
    assert client.containers.list(all=True, filters=ours) == [], "the job's containers were removed"
    assert job_processes(str(job)) == [], "no process of the job outlived it"


def test_evaluation_job_serves_the_policy_inside_the_job(tmp_path):
    """evaluate launcher=slurm serve=vllm: the job starts the server on its node, the token-level
    policy plays against it in a sandbox, and the results land where the CLI said."""
    [job], stdout = train(*served_overrides(tmp_path, free_port()), "launcher=slurm", "hardware=cpu", app="evaluate")
    wait(job, timeout=600)
    log = finished(tmp_path / "served" / "logs", job)
    assert "Job completed successfully" in log and "serving " in log
    [result] = (tmp_path / "served" / "eval" / "results.jsonl").read_text().splitlines()
    assert json.loads(result)["termination"] == "finished"


def test_plain_sbatch_scripts_run_the_same_bootstrap(tmp_path):
    """The sbatch alternatives (one node, two nodes) at once, submitted from the project directory as the
    README says (GPU request dropped on the command line: this cluster has none); preflight-only to
    keep CI short. The config is checked in the job, and the run is named after the job and command."""
    jobs = {}
    for script, nodes in (("train_1node.sbatch", 1), ("train_multinode.sbatch", 2)):
        out = tmp_path / script
        out.mkdir()
        jobs[script] = (
            nodes,
            out,
            subprocess.Popen(
                # The warning comes 60 s before the 10-minute limit here (the scripts' 1,800 s is longer).
                [
                    "sbatch",
                    "--wait",
                    f"--nodes={nodes}",
                    "--gpus-per-node=0",
                    "--cpus-per-task=2",
                    "--time=10",
                    "--signal=USR2@60",
                    f"--job-name=plain-{nodes}",
                    f"--output={out}/%j.out",
                    f"slurm/{script}",
                    *CPU_RUN[:-1],
                    "launcher.preflight_only=true",
                    f"run.output_root={out}",
                ],
                cwd=PROJECT_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    for script, (nodes, out, process) in jobs.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stdout + stderr
        [output] = out.glob("*.out")
        text = output.read_text()
        assert text.count("preflight ok") == nodes, text[-3000:]
        [run_id] = re.findall(
            r"^run (plain-\d-[0-9a-f]{8}): submitting the same command again continues it$", text, re.M
        )
        assert (out / run_id).is_dir(), "the job ran under the run id it printed"
