#!/usr/bin/env bash
# Stop the cluster that tests/cluster/start_slurm.sh started from STATE_DIR:
# cancel its jobs, then stop slurmd, slurmctld and munged by the pids in
# STATE_DIR/run (TERM, then KILL after 15 s), and remove /etc/slurm/slurm.conf
# if start_slurm.sh wrote it for this state directory. The state directory
# (logs, the job completion file) is kept; remove it yourself.
#
#   tests/cluster/stop_slurm.sh STATE_DIR
#
# Safe to call more than once, and on a half-started cluster.
set -uo pipefail

state=${1:?usage: stop_slurm.sh STATE_DIR}
say() { echo "stop_slurm: $*" >&2; }

if [[ ! -d $state/run ]]; then
    say "$state is not a state directory of start_slurm.sh; nothing to stop"
    exit 0
fi

alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2> /dev/null; }

# Jobs first, while slurmctld and slurmd can still end them cleanly.
if alive "$state/run/slurmctld.pid"; then
    jobs=$(squeue -h -o %i 2> /dev/null || true)
    if [[ -n $jobs ]]; then
        say "cancelling jobs: $(echo $jobs)"
        # shellcheck disable=SC2086
        scancel $jobs 2> /dev/null || true
        for _ in $(seq 60); do
            [[ -z $(squeue -h -o %i 2> /dev/null) ]] && break
            sleep 0.5
        done
    fi
fi

stop_daemon() {
    local name=$1 pidfile=$2 pid
    if ! alive "$pidfile"; then
        return 0
    fi
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2> /dev/null || true
    for _ in $(seq 150); do
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2> /dev/null; then
        say "$name (pid $pid) did not stop on TERM; sending KILL"
        kill -KILL "$pid" 2> /dev/null || true
    fi
    say "stopped $name (pid $pid)"
}

stop_daemon slurmd "$state/run/slurmd.pid"
stop_daemon slurmctld "$state/run/slurmctld.pid"
stop_daemon munged "$state/run/munged.pid"

if [[ -s $state/installed-conf ]]; then
    conf=$(cat "$state/installed-conf")
    if [[ -f $conf ]] && grep -qxF "# state directory $state." "$conf"; then
        rm -f "$conf"
        say "removed $conf"
    fi
    rm -f "$state/installed-conf"
fi
exit 0
