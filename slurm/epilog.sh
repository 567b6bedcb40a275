#!/bin/bash
# Slurm epilog snippet for admins: once a job has ended on this node, end the processes terminal_rl
# started for it that outlived it, and remove its sandbox containers. A cancelled job can die before
# its own clean-up runs (srun SIGKILLs tasks on a second signal), proctrack/linuxproc loses the
# node's Ray (a session of its own), and a rootful Docker daemon keeps containers outside the job's
# cgroup. Only processes and containers marked with this job's id are touched.
# Install as (or call from) the node's Epilog= script; it uses the checkout it lives in (or
# PROJECT_DIR) and the Docker endpoint in DOCKER_HOST, if set.
PROJECT_DIR=${PROJECT_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$PROJECT_DIR/.venv/bin/python" -m terminal_rl.launch.epilog "job_id=$SLURM_JOB_ID" \
  >/dev/null 2>&1 || true
exit 0
