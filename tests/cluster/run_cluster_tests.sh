#!/usr/bin/env bash
# The SLURM part of CI: install SLURM and munge from Debian (as root), start the
# one-node cluster of start_slurm.sh, run tests/cluster (the smoke config through
# the slurm executor, compared byte for byte with a local run; a scancel'd job
# retried), and stop the cluster by pid on exit, also on failure.
#
#   bash tests/cluster/run_cluster_tests.sh
#   ISVM_SLURM_LOCAL_RUN=DIR bash tests/cluster/run_cluster_tests.sh   # reuse a local smoke run
#
# Where SLURM cannot be installed or started here (not root, no apt-get, no
# package mirror, a SLURM already configured on this machine, ports taken), it
# prints "SLURM cluster tests SKIPPED: <reason>" and exits 0. Otherwise its exit
# code is pytest's; the last line says what was shown:
#   SLURM: N jobs submitted, tables identical, scancel/retry passed
set -uo pipefail
cd "$(dirname "$0")/../.."

start_all=$SECONDS
python=${ISVM_PYTHON:-.venv/bin/python}
state=""
cleanup() {
    if [[ -n $state ]]; then
        bash tests/cluster/stop_slurm.sh "$state" 2>&1 | grep -v 'nothing to stop'
        rm -rf "$state"
        state=""
    fi
}
skip() {
    cleanup
    trap - EXIT
    echo "SLURM cluster tests SKIPPED: $*"
    exit 0
}

# ------------------------------------------------------------------ packages
if [[ $(id -u) -ne 0 ]]; then
    skip "not running as root (installing SLURM and running its daemons needs root)"
fi
if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null ||
    ! command -v munged > /dev/null || ! command -v sbatch > /dev/null; then
    command -v apt-get > /dev/null || skip "no apt-get to install slurm-wlm and munge"
    echo "installing slurm-wlm and munge (apt-get) ..."
    apt_log=$(mktemp "${TMPDIR:-/tmp}/isvm-apt.XXXXXX")
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends slurm-wlm munge > "$apt_log" 2>&1; then
        # a fresh image may have no package lists yet
        apt-get update > "$apt_log" 2>&1 &&
            apt-get install -y --no-install-recommends slurm-wlm munge > "$apt_log" 2>&1 ||
            skip "apt-get install slurm-wlm munge failed: $(tail -n 1 "$apt_log")"
    fi
    rm -f "$apt_log"
fi
echo "$(slurmctld -V) ($(dpkg-query -W -f='${Version}' slurm-wlm 2> /dev/null || echo '?'))," \
    "$($python -c 'import importlib.metadata as m; print("snakemake", m.version("snakemake") + ",", "snakemake-executor-plugin-slurm", m.version("snakemake-executor-plugin-slurm"))')"

# ------------------------------------------------------------------- cluster
state=$(mktemp -d "${TMPDIR:-/tmp}/isvm-slurm.XXXXXX")
trap cleanup EXIT

rc=0
start_log=$(mktemp "${TMPDIR:-/tmp}/isvm-slurm-start.XXXXXX")
bash tests/cluster/start_slurm.sh "$state" > /dev/null 2> "$start_log" || rc=$?
cat "$start_log"
why=$(grep '^start_slurm: ' "$start_log" | tail -n 1 | sed 's/^start_slurm: //')
rm -f "$start_log"
case $rc in
    0) ;;
    3) skip "SLURM or munge is not installed: $why" ;;
    4) skip "this machine cannot host the throwaway cluster: $why" ;;
    *) skip "the SLURM daemons did not come up (start_slurm.sh exit $rc): $why" ;;
esac
# shellcheck source=/dev/null
. "$state/env"
export ISVM_SLURM_SUMMARY=$state/summary.json
echo "cluster up in $((SECONDS - start_all)) s"

# --------------------------------------------------------------------- tests
rc=0
timeout 1200 "$python" -m pytest tests/cluster -p no:cacheprovider -s -rA -v || rc=$?
if [[ $rc -ne 0 ]]; then
    echo "---- slurmctld log (last 20 lines)"
    tail -n 20 "$state/log/slurmctld.log" 2> /dev/null
    echo "SLURM cluster tests FAILED (pytest exit code $rc)"
    exit "$rc"
fi

summary=$("$python" - "$ISVM_SLURM_SUMMARY" << 'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["scancel"]
print(
    f"SLURM: {s['jobs_submitted']} jobs submitted ({s['loo_jobs']} LOO jobs in loo_batch "
    f"groups), {s['slurm_wall_s']} s; tables identical ({s['tables_identical']} files vs the "
    f"local run); scancel/retry passed (job {c['cancelled']} cancelled, resubmitted as "
    f"{', '.join(c['resubmitted_as'])}, tables unchanged, {c['wall_s']} s)"
)
EOF
) || {
    echo "SLURM cluster tests FAILED: the tests did not record their numbers (were they skipped?)"
    exit 1
}
cleanup
trap - EXIT
echo "cluster tests done in $((SECONDS - start_all)) s"
echo "$summary"
