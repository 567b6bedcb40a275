# Sourced by the sbatch scripts: the project's virtual environment and the run's shared directory.
# Edit for your cluster (module loads, proxy, Docker or podman endpoint).
PROJECT_DIR=${PROJECT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
source "$PROJECT_DIR/.venv/bin/activate"
export TERMINAL_RL_OUTPUT_ROOT=${TERMINAL_RL_OUTPUT_ROOT:-$PROJECT_DIR/outputs}
# The run id: job name + a hash of the command (terminal_rl/launch/node.py, run_id_for), or export TERMINAL_RL_RUN_ID.
# Rootless clusters: point sandboxes at podman's Docker-compatible socket.
# export DOCKER_HOST=unix:///run/user/$(id -u)/podman/podman.sock
