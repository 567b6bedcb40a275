"""Preflight's probe of what the container engine sees under run.node_local_root, against a real
dockerd: here it sees the job's files; in a job whose /tmp is private (Slurm's job_container/tmpfs,
PrivateTmp: reproduced with a private mount namespace and a tmpfs over the folder) it does not, and
the run is refused before any sandbox would start without its lease."""

import subprocess
import sys

import pytest

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.preflight.job import train_job
from terminal_rl.training.node_checks import check_sandbox_mounts

pytestmark = pytest.mark.docker

PROBE = """
import sys
from terminal_rl.config import compose
from terminal_rl.preflight.job import train_job
from terminal_rl.training.node_checks import check_sandbox_mounts
print(check_sandbox_mounts(train_job(compose("train", ["hardware=cpu", "model=tiny", "run.id=probe",
                                             f"run.node_local_root={sys.argv[1]}"]))))
"""


def test_the_engine_sees_the_jobs_node_local_files(tmp_path):
    cfg = compose("train", ["hardware=cpu", "model=tiny", "run.id=probe", f"run.node_local_root={tmp_path}"])
    assert check_sandbox_mounts(train_job(cfg)) == []
    assert not list((tmp_path / "probe" / "leases").glob("probe-*")), "the probe file is removed"


def test_a_private_tmp_is_refused(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    shell = f"mount -t tmpfs none {private} && {sys.executable} -c '{PROBE}' {private}"
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the container engine does not see what this job writes under run.node_local_root" in done.stdout
    assert "job_container/tmpfs" in done.stdout
