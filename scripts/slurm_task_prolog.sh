#!/bin/sh
# TaskProlog of the one-machine test cluster (scripts/start_slurm.sh). On a real cluster every node
# has its own container engine; here node1 and node2 share one host, so a job may give its nodes
# different engines to keep their images apart: TERMINAL_RL_TEST_NODE_ENGINES in the job's environment,
# e.g. "node2=unix:///run/podman/podman.sock", exports DOCKER_HOST for the tasks on the nodes it names.
for pair in ${TERMINAL_RL_TEST_NODE_ENGINES:-}; do
  if [ "${pair%%=*}" = "$SLURMD_NODENAME" ]; then
    echo "export DOCKER_HOST=${pair#*=}"
  fi
done
exit 0
