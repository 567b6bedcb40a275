"""What launcher=slurm asks Slurm for: resources from the hardware preset, cluster settings from the
launcher config and the git-ignored conf/local/slurm.yaml; and how often a preempted job requeues."""

import shutil
import time

import pytest

from terminal_rl.config import CONF_DIR, PROJECT_ROOT, compose, to_dataclass
from terminal_rl.launch.slurm import SlurmLauncherConfig, slurm_parameters
from terminal_rl.training.job import HardwareConfig

LOCAL = CONF_DIR / "local" / "slurm.yaml"


def parameters(*overrides):
    cfg = compose("train", ["launcher=slurm", "run.id=r1", *overrides])
    return slurm_parameters(
        to_dataclass(cfg.hardware, HardwareConfig), to_dataclass(cfg.launcher, SlurmLauncherConfig), "r1"
    )


@pytest.fixture
def local_slurm_settings():
    """The example copied to conf/local/slurm.yaml, as a user would (any real one is put back)."""
    backup = LOCAL.read_bytes() if LOCAL.exists() else None
    created = not LOCAL.parent.exists()
    LOCAL.parent.mkdir(exist_ok=True)
    shutil.copy(PROJECT_ROOT / "slurm" / "local_slurm.example.yaml", LOCAL)
    yield
    if backup is not None:
        LOCAL.write_bytes(backup)
    elif created:
        shutil.rmtree(LOCAL.parent)
    else:
        LOCAL.unlink()


def test_resources_come_from_the_hardware_preset():
    assert parameters("hardware=h100_4x8", "model=qwen3_32b") == {
        "nodes": 4,
        "tasks_per_node": 1,
        "cpus_per_task": 96,
        "mem_gb": 0,
        "gpus_per_node": 8,
        "timeout_min": 1440,
        "name": "trl-r1",
        "slurm_signal_delay_s": 1800,
        # srun of Slurm 22.05-23.02 does not inherit the CPUs; requeue is asked for, not assumed.
        "slurm_srun_args": ["--cpus-per-task=96", "--kill-on-bad-exit=1"],
        "slurm_additional_parameters": {"requeue": True},
    }
    assert "gpus_per_node" not in parameters("hardware=cpu", "model=tiny"), "CPU runs ask Slurm for no GPU"


def test_local_settings_merge_over_the_launcher_config(local_slurm_settings):
    got = parameters("hardware=h100_4x8", "model=qwen3_32b")
    assert (got["slurm_partition"], got["slurm_account"], got["slurm_qos"], got["slurm_constraint"]) == (
        "gpu",
        "my-lab",
        "normal",
        "h100",
    )
    assert got["slurm_additional_parameters"] == {"requeue": True, "exclusive": True}
    assert parameters("hardware=h100_4x8", "model=qwen3_32b", "launcher.partition=debug")["slurm_partition"] == "debug"


def test_local_settings_are_git_ignored():
    assert "conf/local/" in (PROJECT_ROOT / ".gitignore").read_text().splitlines()


def test_requeues_stop_at_max_restarts_and_wait_for_the_trainers_save(tmp_path, capsys):
    """submitit asks the job body (rank 0) what to resubmit on Slurm's signal: first a save of the
    trainer's current step is asked for and waited for, then itself with one more restart counted,
    until launcher.max_restarts is used up."""
    import threading

    from terminal_rl.launch.slurm import SlurmRun
    from terminal_rl.preflight.job import train_job
    from terminal_rl.training.preemption import acknowledge, exchange_folder, save_requested

    job = train_job(
        compose(
            "train",
            [
                "launcher=slurm",
                "run.id=r1",
                "launcher.max_restarts=2",
                f"run.output_root={tmp_path}",
                "launcher.signal_delay_s=62",
            ],
        )
    )
    folder = exchange_folder(job.run)

    def trainer(step):
        while not save_requested(folder):
            time.sleep(0.01)
        acknowledge(folder, step)

    threading.Thread(target=trainer, args=(5,)).start()
    again = SlurmRun(job, restarts=1).checkpoint()
    assert again.function.restarts == 2 and again.function.job is job
    assert "requeue: the trainer saved step 5" in capsys.readouterr().out
    threading.Thread(target=trainer, args=(6,)).start()
    assert SlurmRun(job, restarts=2).checkpoint() is None, "no restart left: saved, not requeued"


def test_a_requeued_attempts_workers_never_see_an_earlier_attempts_done_marker(tmp_path, monkeypatch):
    """A requeue keeps the job id: attempt 0's "trainer done" file must not stop attempt 1's workers."""
    from terminal_rl.launch.markers import done_marker
    from terminal_rl.run_context import RunContext

    run = RunContext.from_config(compose("train", ["run.id=r1", f"run.output_root={tmp_path}"]).run)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    first = done_marker(run, "4242")
    first.write_text("done")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert not done_marker(run, "4242").exists() and done_marker(run, "4242") != first


def test_ray_ports_stay_below_the_ephemeral_range_and_apart_per_job_and_node():
    from terminal_rl.launch.slurm import RANK_PORTS, node_port_base

    bases = {(job, rank): node_port_base(job, rank) for job in range(1000, 1040) for rank in range(10)}
    assert max(bases.values()) + RANK_PORTS - 1 < 32768 and min(bases.values()) > 10001  # Ray's client port
    assert len({node_port_base(job, rank) for job in range(1000, 1020) for rank in range(10)}) == 200
    with pytest.raises(ValueError, match="holds 10 nodes a job"):
        node_port_base(1000, 10)


def test_every_node_of_a_run_reads_one_ray_token_made_for_it(tmp_path):
    """The token lives in the run's shared directory, private to its owner, the same for every node
    and attempt (a fresh account has no ~/.ray/auth_token)."""
    import stat
    from concurrent.futures import ThreadPoolExecutor

    from terminal_rl.launch.slurm import ray_auth_token
    from terminal_rl.run_context import RunContext

    run = RunContext.from_config(compose("train", ["run.id=r1", f"run.output_root={tmp_path}"]).run)
    with ThreadPoolExecutor(4) as nodes:
        paths = set(nodes.map(lambda _: ray_auth_token(run), range(4)))
    [path] = paths
    assert path.parent == run.shared_dir and len(path.read_text()) == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ray_auth_token(run).read_text() == path.read_text(), "a requeued attempt keeps the token"
    assert list(run.shared_dir.glob(".ray_auth_token.*")) == [], "each node's own draft is gone"


def test_the_head_starts_its_join_timer_once_every_node_is_prepared(tmp_path, monkeypatch):
    """A node still loading the image archive is waited for (up to the image timeout), not timed out
    by the join's 300 s; a node that never gets there is named; what each wrote comes back."""
    import threading
    import time

    from terminal_rl.launch.markers import rank_marker, wait_for_ranks
    from terminal_rl.run_context import RunContext

    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    run = RunContext.from_config(compose("train", ["run.id=r1", f"run.output_root={tmp_path}"]).run)
    rank_marker(run, "9", 0, "prepared").write_text("prepared")
    threading.Timer(0.3, lambda: rank_marker(run, "9", 1, "prepared").write_text("late")).start()
    started = time.monotonic()
    assert wait_for_ranks(run, "9", range(2), "prepared", timeout_sec=10, poll_sec=0.05) == {0: "prepared", 1: "late"}
    assert 0.25 < time.monotonic() - started < 5
    with pytest.raises(RuntimeError, match=r"node rank\(s\) \[2\] did not report 'prepared' within 0.2 s"):
        wait_for_ranks(run, "9", range(3), "prepared", timeout_sec=0.2, poll_sec=0.05)


def test_a_worker_has_joined_once_the_head_lists_it_alive_in_ray(tmp_path, monkeypatch):
    """Not "its ray start still runs after 5 s": the head's view of Ray's node table, by this node's
    own node-manager port (nodes of one host share an address), for this attempt only."""
    from types import SimpleNamespace

    from terminal_rl.launch.markers import RAY_NODES, attempt_marker, write_json
    from terminal_rl.launch.slurm import joined, node_port_base
    from terminal_rl.run_context import RunContext

    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    run = RunContext.from_config(compose("train", ["run.id=r1", f"run.output_root={tmp_path}"]).run)
    worker = SimpleNamespace(job_id="77", global_rank=1)
    assert not joined(run, worker), "no list yet"
    write_json(attempt_marker(run, "77", RAY_NODES), [node_port_base("77", 0)])
    assert not joined(run, worker), "the head alone"
    write_json(attempt_marker(run, "77", RAY_NODES), [node_port_base("77", 0), node_port_base("77", 1)])
    assert joined(run, worker)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert not joined(run, worker), "a requeued attempt waits for its own head's list"
