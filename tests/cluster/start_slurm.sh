#!/usr/bin/env bash
# Start a throwaway single-node SLURM cluster on this machine (as root):
# munged with a fresh key and its own socket, slurmctld and slurmd, one node with
# this machine's CPUs and memory, one partition, no accounting daemon, and process
# tracking that needs neither systemd nor cgroups. Waits until sinfo shows the
# node idle.
#
#   tests/cluster/start_slurm.sh [STATE_DIR]     # default: a fresh /tmp/isvm-slurm.XXXXXX
#   . STATE_DIR/env                              # ISVM_SLURM=1, ISVM_SLURM_STATE, ...
#   ...                                          # sbatch, squeue, snakemake --executor slurm
#   tests/cluster/stop_slurm.sh STATE_DIR        # stops what this script started, by pid
#
# Everything lives in STATE_DIR (key, sockets, spool, state, logs, pid files)
# except the configuration, which has to be /etc/slurm/slurm.conf: srun inside a
# job is run with the SLURM_* variables removed (the slurm-jobstep plugin does
# that), so SLURM_CONF cannot point elsewhere. An existing /etc/slurm/slurm.conf
# that this script did not write is never touched (exit code 4).
#
# The last line on stdout is the state directory. Exit codes: 0 running,
# 3 SLURM or munge not installed, 4 cannot use this machine (not root, a foreign
# slurm.conf, ports taken), 5 a daemon did not come up (its log is printed).
#
# Environment: ISVM_SLURM_PARTITION (default "local"), ISVM_SLURM_CTLD_PORT
# (6817), ISVM_SLURM_SLURMD_PORT (6818), ISVM_SLURM_MEM_MARGIN_MB (memory kept
# back from the node for the OS and the submitting snakemake; default 1024).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
partition=${ISVM_SLURM_PARTITION:-local}
ctld_port=${ISVM_SLURM_CTLD_PORT:-6817}
slurmd_port=${ISVM_SLURM_SLURMD_PORT:-6818}
margin=${ISVM_SLURM_MEM_MARGIN_MB:-1024}
conf=/etc/slurm/slurm.conf
marker="# written by tests/cluster/start_slurm.sh"

say() { echo "start_slurm: $*" >&2; }

# ---------------------------------------------------------------- preconditions
for tool in munged munge unmunge slurmctld slurmd sinfo squeue sbatch scontrol; do
    if ! command -v "$tool" > /dev/null; then
        say "'$tool' not found (apt-get install slurm-wlm munge)"
        exit 3
    fi
done
if [[ $(id -u) -ne 0 ]]; then
    say "must run as root (the daemons run as root on this throwaway cluster)"
    exit 4
fi
if [[ -e $conf ]] && ! grep -qF "$marker" "$conf"; then
    say "$conf exists and was not written by this script: not touching a real SLURM setup"
    exit 4
fi
if [[ -e $conf ]]; then
    old_state=$(sed -n 's/^# state directory \(.*\)\.$/\1/p' "$conf" | head -1)
    if [[ -n $old_state && -s $old_state/run/slurmctld.pid ]] &&
        kill -0 "$(cat "$old_state/run/slurmctld.pid")" 2> /dev/null; then
        say "a cluster from this script is still running (state $old_state);"
        say "stop it first: tests/cluster/stop_slurm.sh $old_state"
        exit 4
    fi
fi
for port in "$ctld_port" "$slurmd_port"; do
    if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
        say "port $port is in use (set ISVM_SLURM_CTLD_PORT / ISVM_SLURM_SLURMD_PORT)"
        exit 4
    fi
done

# -------------------------------------------------------------------- the state
state=${1:-$(mktemp -d "${TMPDIR:-/tmp}/isvm-slurm.XXXXXX")}
mkdir -p "$state"
state=$(cd "$state" && pwd)
if [[ -n $(ls -A "$state") ]]; then
    say "state directory $state is not empty; give a fresh one"
    exit 4
fi
chmod 700 "$state"
mkdir -m 700 "$state/munge" "$state/slurmctld" "$state/slurmd" "$state/run" "$state/log"

host=$(hostname -s)
cpus=$(nproc)
mem_total=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
mem=$((mem_total - margin))

started=()  # "name pidfile", for the error path
fail() {
    local log=$1
    shift
    say "$*"
    if [[ -n $log && -s $log ]]; then
        say "---- last lines of $log"
        tail -n 30 "$log" >&2
    fi
    bash "$here/stop_slurm.sh" "$state" >&2 || true
    exit 5
}

# ------------------------------------------------------------------------ munge
# A fresh key for this cluster only (not /etc/munge/munge.key).
dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$state/munge/munge.key"
socket=$state/munge/munge.socket
munged --force --key-file="$state/munge/munge.key" --socket="$socket" \
    --pid-file="$state/run/munged.pid" --log-file="$state/log/munged.log" \
    --seed-file="$state/munge/munged.seed" ||
    fail "$state/log/munged.log" "munged did not start"
for _ in $(seq 50); do
    [[ -S $socket && -s $state/run/munged.pid ]] && break
    sleep 0.1
done
munge -n -S "$socket" | unmunge -S "$socket" > /dev/null ||
    fail "$state/log/munged.log" "munge credential round trip failed"
say "munged running (pid $(cat "$state/run/munged.pid"), socket $socket)"

# ------------------------------------------------------------------- slurm.conf
sed -e "s|@STATE@|$state|g" -e "s|@HOST@|$host|g" -e "s|@CPUS@|$cpus|g" \
    -e "s|@MEM_MB@|$mem|g" -e "s|@PARTITION@|$partition|g" \
    -e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@SLURMD_PORT@|$slurmd_port|g" \
    "$here/slurm.conf.in" > "$state/slurm.conf"
{
    echo "$marker"
    echo "# state directory $state."
    cat "$state/slurm.conf"
} > "$state/slurm.conf.installed"
mkdir -p /etc/slurm
cp "$state/slurm.conf.installed" "$conf"
echo "$conf" > "$state/installed-conf"
say "wrote $conf (node $host: CPUs=$cpus RealMemory=$mem MB, partition $partition)"

# ---------------------------------------------------------------------- daemons
slurmctld -i > "$state/log/slurmctld.stdout" 2>&1 ||
    fail "$state/log/slurmctld.log" "slurmctld did not start"
slurmd > "$state/log/slurmd.stdout" 2>&1 ||
    fail "$state/log/slurmd.log" "slurmd did not start"
for _ in $(seq 100); do
    [[ -s $state/run/slurmctld.pid && -s $state/run/slurmd.pid ]] && break
    sleep 0.1
done
[[ -s $state/run/slurmctld.pid ]] || fail "$state/log/slurmctld.log" "no slurmctld pid file"
[[ -s $state/run/slurmd.pid ]] || fail "$state/log/slurmd.log" "no slurmd pid file"
say "slurmctld (pid $(cat "$state/run/slurmctld.pid")) and slurmd" \
    "(pid $(cat "$state/run/slurmd.pid")) running"

# ----------------------------------------------------------- wait for node idle
node_state=""
for i in $(seq 120); do
    node_state=$(sinfo -h -n "$host" -o %T 2> /dev/null | head -1 || true)
    [[ $node_state == idle ]] && break
    if [[ $node_state == down* || $node_state == drain* ]] && ((i % 10 == 0)); then
        scontrol update NodeName="$host" State=RESUME 2> /dev/null || true
    fi
    sleep 0.5
done
if [[ $node_state != idle ]]; then
    fail "$state/log/slurmd.log" "node $host is '${node_state:-unknown}', not idle, after 60 s"
fi
sinfo >&2

cat > "$state/env" << EOF
export ISVM_SLURM=1
export ISVM_SLURM_STATE=$state
export ISVM_SLURM_PARTITION=$partition
export ISVM_SLURM_NODE=$host
EOF
say "cluster up: node $host idle in partition $partition; state $state"
echo "$state"
