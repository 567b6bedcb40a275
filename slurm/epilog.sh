#!/bin/bash
# Slurm epilog snippet for admins: remove the finished job's sandbox containers on this node, in case
# the job was killed before its own janitor ran (a rootful Docker daemon keeps containers outside the
# job's cgroup). Only containers labelled by terminal_rl for this job's run are touched.
# Install as (or call from) the node's Epilog= script; PROJECT_DIR must point at an installed checkout.
RUN_ID="${SLURM_JOB_NAME}-${SLURM_JOB_ID}"
"${PROJECT_DIR:-/opt/terminal_rl}/.venv/bin/python" -m terminal_rl.sandbox janitor --this-run run.id="$RUN_ID" || true
