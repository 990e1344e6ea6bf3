#!/usr/bin/env bash
# A one-node Slurm cluster on this machine (root), to try profiles/slurm before a real cluster.
#
#   scripts/slurm-local.sh up     [DIR]   install slurm-wlm + munge if missing, write DIR/slurm.conf,
#                                         start munged, slurmctld, slurmd; wait until the node is idle
#   scripts/slurm-local.sh status [DIR]   sinfo
#   scripts/slurm-local.sh down   [DIR]   stop the three daemons (state stays in DIR)
#
# DIR defaults to $ARGENT_SLURM_DIR, else .slurm/ in the current folder. /etc/slurm/slurm.conf
# becomes a link to DIR/slurm.conf (removed by `down`), so sinfo/sbatch/srun find it. One partition, `debug`, with this host's
# real CPU count and memory (`slurmd -C`). No cgroup plugins (containers often have none), no
# accounting daemon: use `--slurm-status-command squeue` (MinJobAge keeps finished jobs in squeue).
# Exit code 77: a daemon was refused by this machine (its log is printed).
set -euo pipefail

cmd=${1:-}
DIR=$(mkdir -p "${2:-${ARGENT_SLURM_DIR:-.slurm}}" && cd "${2:-${ARGENT_SLURM_DIR:-.slurm}}" && pwd)
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF

die() { echo "slurm-local.sh: $*" >&2; exit 1; }
refused() { echo "slurm-local.sh: $1 did not start on this machine; its log:" >&2; tail -n 30 "$2" >&2 || true; exit 77; }
alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return
    [[ $(id -u) == 0 ]] || die "slurm-wlm and munge are missing; installing them needs root (apt-get)"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
    local node; node=$(slurmd -C | head -1)  # NodeName=<host> CPUs=.. Boards=.. ... RealMemory=..
    local name=${node#NodeName=}; name=${name%% *}
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    cat > "$CONF" <<EOF
# Written by scripts/slurm-local.sh: one node, this host, loopback only.
ClusterName=argent-local
SlurmctldHost=$name(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
# Finished jobs stay visible to squeue for an hour: the status query of the Snakemake plugin.
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$name Default=YES MaxTime=INFINITE State=UP
EOF
    sed -i 's/ UpTime=[^ ]*//' "$CONF"
}

up() {
    install
    [[ $(id -u) == 0 ]] || die "the daemons need root here (slurmd starts jobs as their users)"
    [[ -f $CONF ]] || write_conf
    # Job steps (srun inside a batch job) read Slurm's default place, as on any cluster node; link it
    # unless another Slurm's configuration is already there.
    mkdir -p /etc/slurm
    if [[ -L /etc/slurm/slurm.conf || ! -e /etc/slurm/slurm.conf ]]; then ln -sfn "$CONF" /etc/slurm/slurm.conf
    elif [[ $(readlink -f /etc/slurm/slurm.conf) != "$CONF" ]]; then die "/etc/slurm/slurm.conf belongs to another Slurm; not touching it"; fi
    # munged: as its own user, socket and pid in Debian's places.
    if ! munge -n >/dev/null 2>&1; then
        mkdir -p /run/munge && chown munge: /run/munge && chmod 755 /run/munge
        [[ -f /etc/munge/munge.key ]] || { mungekey --create 2>/dev/null || create-munge-key -f; chown munge: /etc/munge/munge.key; }
        runuser -u munge -- munged >"$DIR/log/munged.out" 2>&1 || refused munged "$DIR/log/munged.out"
        munge -n >/dev/null || refused "munged (no credential)" /var/log/munge/munged.log
    fi
    if ! alive "$DIR/slurmctld.pid"; then
        slurmctld -f "$CONF" >"$DIR/log/slurmctld.out" 2>&1 || refused slurmctld "$DIR/log/slurmctld.log"
    fi
    if ! alive "$DIR/slurmd.pid"; then
        slurmd -f "$CONF" >"$DIR/log/slurmd.out" 2>&1 || refused slurmd "$DIR/log/slurmd.log"
    fi
    for _ in $(seq 90); do
        state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
        if [[ $state == idle* || $state == mix* || $state == alloc* ]]; then
            sinfo
            echo "Slurm up ($CONF). Try: snakemake --profile profiles/slurm --configfile config/smoke.yaml"
            return
        fi
        if [[ $state == drain* || $state == inval* ]]; then scontrol update nodename=ALL state=resume 2>/dev/null || true; fi
        alive "$DIR/slurmctld.pid" || refused slurmctld "$DIR/log/slurmctld.log"
        alive "$DIR/slurmd.pid" || refused slurmd "$DIR/log/slurmd.log"
        sleep 1
    done
    sinfo -N -l >&2 || true
    refused "the node (not idle after 90 s)" "$DIR/log/slurmd.log"
}

stop_pidfile() {
    local f=$1
    [[ -f $f ]] || return 0
    local pid; pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

down() {
    [[ -f $CONF ]] && scancel --quiet --user=root 2>/dev/null || true
    stop_pidfile "$DIR/slurmd.pid"
    stop_pidfile "$DIR/slurmctld.pid"
    # munged: only the one this script started (its pid file names it; Debian's default place).
    if [[ -f $DIR/log/munged.out && -f /run/munge/munged.pid ]]; then stop_pidfile /run/munge/munged.pid; fi
    if [[ $(readlink /etc/slurm/slurm.conf 2>/dev/null) == "$CONF" ]]; then rm -f /etc/slurm/slurm.conf; fi
    echo "slurm down ($DIR)"
}

case $cmd in
    up) up ;;
    down) down ;;
    status) sinfo ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; [[ $cmd == -h || $cmd == --help ]] ;;
esac
