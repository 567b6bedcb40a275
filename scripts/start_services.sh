#!/usr/bin/env bash
# Start what the tests and the main job need on this machine, idempotently:
#  1. a Docker daemon (Debian's docker.io, started in the background when none answers);
#  2. Podman's Docker-compatible API service (the rootless-cluster path; the core sandbox tests run
#     against both engines);
#  3. the offline base images the task Dockerfiles build FROM, in both engines;
#  4. a two-node Slurm cluster on this machine (scripts/start_slurm.sh) for the launcher tests.
# Usage: scripts/start_services.sh PYTHON [OVERRIDE...]
# With overrides (make run: the main job's task set), only what one training run on this machine needs:
# the Docker daemon, and the base images of that task set (`sandbox command=bootstrap OVERRIDE...`).
set -euo pipefail
PYTHON=${1:?usage: start_services.sh PYTHON [OVERRIDE...]}
shift
LOG_DIR=${TERMINAL_RL_SERVICE_LOGS:-/tmp/terminal_rl-services}
mkdir -p "$LOG_DIR"

PODMAN_SOCKET=/run/podman/podman.sock
answers() { "$PYTHON" -c "import docker, sys; docker.DockerClient(base_url=sys.argv[1]).ping()" "$1" >/dev/null 2>&1; }
docker_answers() { "$PYTHON" -c 'import docker; docker.from_env().ping()' >/dev/null 2>&1; }

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    echo "need root to install $*; install them or point DOCKER_HOST at a running daemon" >&2; exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! docker_answers; then
  if [ -n "${DOCKER_HOST:-}" ]; then
    echo "DOCKER_HOST=$DOCKER_HOST does not answer" >&2; exit 1
  fi
  command -v dockerd >/dev/null || apt_install docker.io
  echo "starting dockerd (log: $LOG_DIR/dockerd.log)"
  # Daemons run from the log directory: files they write to their working directory stay out of the checkout.
  (cd "$LOG_DIR"; setsid nohup dockerd >"$LOG_DIR/dockerd.log" 2>&1 < /dev/null &)
  for _ in $(seq 1 60); do docker_answers && break; sleep 1; done
  docker_answers || { tail -20 "$LOG_DIR/dockerd.log" >&2; echo "dockerd did not start" >&2; exit 1; }
fi
command -v debootstrap >/dev/null || apt_install debootstrap
"$PYTHON" -m terminal_rl.sandbox command=bootstrap "$@"
[ $# -gt 0 ] && exit 0

if ! answers "unix://$PODMAN_SOCKET"; then
  { command -v podman >/dev/null && [ -x /usr/libexec/podman/catatonit ]; } || apt_install podman catatonit
  mkdir -p "$(dirname "$PODMAN_SOCKET")"
  echo "starting podman system service (log: $LOG_DIR/podman.log)"
  (cd "$LOG_DIR"; setsid nohup podman system service --time=0 "unix://$PODMAN_SOCKET" >"$LOG_DIR/podman.log" 2>&1 < /dev/null &)
  for _ in $(seq 1 30); do answers "unix://$PODMAN_SOCKET" && break; sleep 1; done
  answers "unix://$PODMAN_SOCKET" || { tail -20 "$LOG_DIR/podman.log" >&2; echo "podman did not start" >&2; exit 1; }
fi
"$PYTHON" -m terminal_rl.sandbox command=bootstrap sandbox=podman
"$(dirname "$0")/start_slurm.sh" >/dev/null
