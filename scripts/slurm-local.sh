#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, to run trainprof as a cluster
# user would (the tests in tests/slurm use it).
#
#   scripts/slurm-local.sh up       install slurm-wlm and munge when missing, write a
#                                   one-node configuration under the state directory,
#                                   start munged, slurmctld and slurmd, wait until the
#                                   node is idle (already up: returns at once)
#   scripts/slurm-local.sh down     stop exactly the daemons `up` started (by pid)
#   scripts/slurm-local.sh status   exit 0 when up, 3 when not
#   scripts/slurm-local.sh env      the line to use the cluster: export SLURM_CONF=...
#
# Everything lives in the state directory, TP_SLURM_DIR (default
# /var/tmp/trainprof-slurm): slurm.conf, munge key and socket, the daemons'
# pids, logs and spool. Nothing under /etc is written, no system service is
# touched; the daemons listen on ports 16817/16818 (TP_SLURM_PORT,
# TP_SLURM_PORT+1), not SLURM's defaults. Clients find the cluster through
# SLURM_CONF. The daemons run as root (SlurmUser=root): `up` and `down` need
# root; without it they say so and exit 1.
#
# Node: the machine's real CPU count (`slurmd -C`; declaring more CPUs than it
# has makes the node "inval"), proctrack/linuxproc and task/none (no cgroups
# needed, so it runs in a container); submit jobs of more tasks than CPUs
# with --overcommit.
set -euo pipefail

state=${TP_SLURM_DIR:-/var/tmp/trainprof-slurm}
port=${TP_SLURM_PORT:-16817}
conf=$state/slurm.conf
node=tplocal

say() { echo "slurm-local: $*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
  [ "$(id -u)" -eq 0 ] || die "needs root (it starts munged, slurmctld and slurmd as root); run it as root or with sudo"
}

# alive NAME: the daemon NAME's pid from our pid file, running and still NAME
alive() {
  local pid
  pid=$(cat "$state/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$1" ]
}

# the node takes jobs: idle, or running some (not down, drained, inval, or
# not responding: a "*" after the state)
node_ready() {
  case "$(SLURM_CONF=$conf sinfo -h -n "$node" -o %T 2>/dev/null)" in
    idle | mixed | allocated | completing) return 0 ;;
    *) return 1 ;;
  esac
}

is_up() {
  alive munged && alive slurmctld && alive slurmd && node_ready
}

install_missing() {
  local missing=() p
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "slurm-wlm and munge are missing and there is no apt-get to install them"
  say "installing ${missing[*]} (log: $state/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$state/apt.log" 2>&1 || { tail -n 20 "$state/apt.log" >&2; die "apt-get failed (full log: $state/apt.log)"; }
}

write_config() {
  local hw
  # "NodeName=... CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=..."
  hw=$(slurmd -C | head -n 1 | tr ' ' '\n' |
       grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
  [ -n "$hw" ] || die "slurmd -C printed no CPU count"
  cat >"$conf" <<EOF
# written by trainprof's scripts/slurm-local.sh: a one-node cluster
ClusterName=trainprof
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=600
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munged() {
  alive munged && return 0
  # the socket's directory open to all (every job's processes authenticate),
  # the key's private
  mkdir -p "$state/munge" "$state/munge-key"
  chmod 755 "$state/munge"
  chmod 700 "$state/munge-key"
  if [ ! -s "$state/munge-key/munge.key" ]; then
    head -c 1024 /dev/urandom >"$state/munge-key/munge.key"
    chmod 400 "$state/munge-key/munge.key"
  fi
  rm -f "$state/munge/munge.socket" "$state/munge/munge.socket.lock"
  munged --force --key-file="$state/munge-key/munge.key" --socket="$state/munge/munge.socket" \
    --pid-file="$state/munged.pid" --log-file="$state/log/munged.log" \
    --seed-file="$state/munge-key/munge.seed" ||
    die "munged did not start (log: $state/log/munged.log)"
}

# wait_for WHAT SECONDS COMMAND...: poll COMMAND every 0.2 s
wait_for() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" && return 0
    sleep 0.2
  done
  die "$what not ready after ${secs}s (logs: $state/log/)"
}

ctld_answers() { SLURM_CONF=$conf scontrol ping 2>/dev/null | grep -q "is UP"; }

up() {
  need_root
  mkdir -p "$state"
  if [ -f "$conf" ] && is_up; then
    say "already up ($(SLURM_CONF=$conf sinfo -h -o '%D node, %c CPUs, %T'))"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  install_missing
  mkdir -p "$state/ctld" "$state/spool" "$state/log"
  write_config
  start_munged
  wait_for munged 10 test -S "$state/munge/munge.socket"
  if ! alive slurmctld; then
    # -i: ignore (not recover) jobs saved by an earlier run
    slurmctld -f "$conf" -i || die "slurmctld did not start (log: $state/log/slurmctld.log)"
  fi
  wait_for slurmctld 30 ctld_answers
  if ! alive slurmd; then
    slurmd -f "$conf" -N "$node" || die "slurmd did not start (log: $state/log/slurmd.log)"
  fi
  wait_for slurmd 10 alive slurmd
  # a node left down or drained by an earlier run comes back
  SLURM_CONF=$conf scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
  wait_for "node $node (taking jobs in sinfo)" 60 node_ready
  say "up: $(SLURM_CONF=$conf sinfo -h -o '%D node, %c CPUs, %T') (state in $state)"
  echo "export SLURM_CONF=$conf"
}

# stop NAME: SIGTERM to the pid `up` started, then wait for it to go
stop() {
  local pid i
  alive "$1" || { rm -f "$state/$1.pid"; return 0; }
  pid=$(cat "$state/$1.pid")
  kill -TERM "$pid"
  for ((i = 0; i < 100; i++)); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  [ -d "/proc/$pid" ] && { say "$1 ($pid) still running after 10 s: SIGKILL"; kill -KILL "$pid"; }
  rm -f "$state/$1.pid"
  say "stopped $1 ($pid)"
}

down() {
  need_root
  stop slurmd
  stop slurmctld
  stop munged
}

status() {
  if [ -f "$conf" ] && is_up; then
    say "up: $(SLURM_CONF=$conf sinfo -h -o '%D node, %c CPUs, %T') (state in $state)"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  local d
  for d in munged slurmctld slurmd; do
    if alive "$d"; then say "$d running (pid $(cat "$state/$d.pid"))"; else say "$d not running"; fi
  done
  return 3
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
