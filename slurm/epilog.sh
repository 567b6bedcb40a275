#!/bin/bash
# Slurm epilog snippet for admins: once a job has ended on this node, remove terminal_rl sandbox
# containers whose owner process is gone. A cancelled job can die before its own janitor runs (srun
# kills its tasks at once on a second signal), and a rootful Docker daemon keeps containers outside
# the job's cgroup. Containers of runs still alive are never touched.
# Install as (or call from) the node's Epilog= script; it uses the checkout it lives in (or
# PROJECT_DIR) and the Docker endpoint in DOCKER_HOST, if set.
PROJECT_DIR=${PROJECT_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$PROJECT_DIR/.venv/bin/python" -m terminal_rl.sandbox janitor >/dev/null 2>&1 || true
exit 0
