#!/usr/bin/env bash
# A two-node Slurm cluster on this one machine, for the launcher tests (Debian's slurm-wlm is built
# with multiple-slurmd support): node1 and node2 both at 127.0.0.1 with their own slurmd ports,
# spool and pid files. Idempotent: an already answering controller is left alone.
# Usage: scripts/start_slurm.sh
set -euo pipefail
LOG_DIR=${TERMINAL_RL_SERVICE_LOGS:-/tmp/terminal_rl-services}
PROJECT_DIR=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$LOG_DIR"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/log/slurm /run/munge /var/lib/munge
[ -s /etc/munge/munge.key ] || { mkdir -p /etc/munge; dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
chown -R munge:munge /etc/munge /run/munge /var/lib/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c "munged" 2>/dev/null || munged --force
mkdir -p /etc/slurm
CONF_TEXT=$(cat <<CONF
ClusterName=terminal-rl-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd-%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
MpiDefault=none
JobRequeue=1
KillWait=30
# The admin epilog docs/cluster.md documents: sweeps sandboxes a cancelled job's processes left behind.
Epilog=$PROJECT_DIR/slurm/epilog.sh
# Per-node container engines for a job that asks (the script says how).
TaskProlog=$PROJECT_DIR/scripts/slurm_task_prolog.sh
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17002 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=ci Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
)
if scontrol ping 2>/dev/null | grep -q "UP"; then
  # Already running: a changed configuration is applied in place, jobs kept.
  if [ "$CONF_TEXT" != "$(cat /etc/slurm/slurm.conf 2>/dev/null)" ]; then
    printf '%s\n' "$CONF_TEXT" > /etc/slurm/slurm.conf
    scontrol reconfigure
  fi
  exit 0
fi
printf '%s\n' "$CONF_TEXT" > /etc/slurm/slurm.conf
mkdir -p /var/spool/slurmd-node1 /var/spool/slurmd-node2
slurmctld -c  # a fresh cluster: jobs of earlier sessions are forgotten, not resumed
slurmd -N node1
slurmd -N node2
for _ in $(seq 1 30); do
  if sinfo -h -o "%T" 2>/dev/null | grep -qE "idle|mix"; then break; fi
  sleep 1
done
sinfo
