"""The smoke config through a real SLURM: the snakemake-executor-plugin-slurm and
workflow/profiles/slurm-local on the one-node cluster of tests/cluster/start_slurm.sh.

- the SLURM run submits its jobs through sbatch (the plugin's log names a SLURM
  job id for each; slurmctld's job completion record lists each one COMPLETED
  under the run's job name) and its results/smoke/tables are byte-identical to a
  local run of the same config;
- a LOO batch killed with `scancel` while it runs is reported by Snakemake,
  submitted again (--retries 1), and the tables come out unchanged.

These tests are marked ``cluster`` and skipped (with the reason) unless
ISVM_SLURM=1 and `sinfo` answers: tests/cluster/run_cluster_tests.sh installs and
starts the cluster, sets the variables, runs this module and stops the cluster.
To run them against a cluster started by hand:

    tests/cluster/start_slurm.sh /tmp/slurm-state && . /tmp/slurm-state/env
    .venv/bin/python -m pytest tests/cluster -s -rA
    tests/cluster/stop_slurm.sh /tmp/slurm-state

ISVM_SLURM_LOCAL_RUN=DIR reuses DIR (a finished local run of config/smoke.yaml,
e.g. .ci/run's first smoke run) as the reference instead of running it again.
ISVM_SLURM_SUMMARY=FILE collects the numbers (jobs submitted, wall times) as JSON.

The first test (the two profiles differ only in site settings) needs no cluster
and runs in the normal test run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SNAKEFILE = ROOT / "Snakefile"
SMOKE = ROOT / "config" / "smoke.yaml"
PROFILES = ROOT / "workflow" / "profiles"
LOCAL_PROFILE = PROFILES / "slurm-local"

#: Keys in which workflow/profiles/slurm-local may differ from workflow/profiles/slurm:
#: what a site sets (partition, account, node size, how job states are polled).
SITE_KEYS = {
    "default-resources.slurm_partition",
    "default-resources.slurm_account",
    "cores",
    "slurm-status-command",
    "slurm-init-seconds-before-status-checks",
}

SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+)")
RUN_ID = re.compile(r"SLURM run ID: (\S+)")

#: Upper bound for one snakemake run through SLURM (seconds).
RUN_TIMEOUT = 900


# ------------------------------------------------------------- helpers


def _flatten(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _snakemake_cmd(workdir: Path, *args: object) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--directory",
        str(workdir),
        "--configfile",
        str(SMOKE),
        *map(str, args),
    ]


def _say(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def _tail(text: str, n: int = 60) -> str:
    return "\n".join(text.splitlines()[-n:])


def _record(key: str, value: object) -> None:
    """Add one number to the JSON summary (ISVM_SLURM_SUMMARY) that run_cluster_tests.sh prints."""
    path = os.environ.get("ISVM_SLURM_SUMMARY")
    if not path:
        return
    p = Path(path)
    data = json.loads(p.read_text()) if p.exists() else {}
    data[key] = value
    p.write_text(json.dumps(data, indent=1, sort_keys=True))


def _table_files(workdir: Path) -> dict[str, bytes]:
    tables = workdir / "results" / "smoke" / "tables"
    return {
        str(p.relative_to(tables)): p.read_bytes() for p in sorted(tables.rglob("*")) if p.is_file()
    }


def assert_tables_identical(reference: Path, other: Path) -> int:
    """Every file of results/smoke/tables, recursively: same names and bytes. Returns the count."""
    ref, got = _table_files(reference), _table_files(other)
    assert ref, f"no tables under {reference}/results/smoke/tables"
    assert sorted(got) == sorted(ref), (
        f"different files: only in the local run {sorted(set(ref) - set(got))}, "
        f"only in the SLURM run {sorted(set(got) - set(ref))}"
    )
    differ = [name for name in ref if ref[name] != got[name]]
    assert not differ, f"tables that differ from the local run: {differ}"
    return len(ref)


def _jobcomp() -> dict[str, dict[str, str]] | None:
    """slurmctld's job completion records (JobCompType=jobcomp/filetxt), by job id."""
    state = os.environ.get("ISVM_SLURM_STATE")
    path = Path(state) / "log" / "jobcomp.txt" if state else None
    if path is None or not path.exists():
        return None
    records = {}
    for line in path.read_text().splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "JobId" in fields:
            records[fields["JobId"]] = fields
    return records


def _squeue_all(run_id: str) -> dict[str, str]:
    """Job id -> state of the run's jobs that slurmctld still remembers (MinJobAge)."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T", "--name", run_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("|", 1) for line in out.split())


def slurm_states(run_id: str, ids: set[str]) -> dict[str, str]:
    """SLURM's own final state of each job id of run ``run_id`` (job name = run id)."""
    records = _jobcomp()
    if records is not None:
        # the completion record is written when the job ends; allow slurmctld a moment
        for _ in range(20):
            if ids <= set(records):
                break
            time.sleep(0.5)
            records = _jobcomp() or {}
        return {
            i: r["JobState"] for i, r in records.items() if i in ids and r.get("Name") == run_id
        }
    return {i: s for i, s in _squeue_all(run_id).items() if i in ids}


class SlurmRun:
    """One finished snakemake run through SLURM."""

    def __init__(self, workdir: Path, log: str, returncode: int, seconds: float):
        self.workdir, self.log, self.returncode, self.seconds = workdir, log, returncode, seconds
        found = RUN_ID.search(log)
        self.run_id = found.group(1) if found else None
        #: (snakemake job id, SLURM job id), in the order of submission
        self.submissions = SUBMITTED.findall(log)

    @property
    def slurm_ids(self) -> set[str]:
        return {sid for _, sid in self.submissions}


# ------------------------------------------------------------- no cluster needed


def test_local_profile_differs_from_the_slurm_profile_only_in_site_settings():
    slurm_file = PROFILES / "slurm" / "config.yaml"
    if not slurm_file.exists():
        pytest.skip("workflow/profiles/slurm/config.yaml does not exist yet")
    slurm = _flatten(yaml.safe_load(slurm_file.read_text()))
    local = _flatten(yaml.safe_load((LOCAL_PROFILE / "config.yaml").read_text()))
    differ = {k for k in slurm.keys() | local.keys() if slurm.get(k) != local.get(k)}
    assert differ <= SITE_KEYS, (
        "workflow/profiles/slurm-local must follow workflow/profiles/slurm except in site "
        f"settings; also differ: {sorted(differ - SITE_KEYS)}"
    )
    assert local["executor"] == "slurm"
    assert "default-resources.slurm_account" not in local  # the local cluster has no accounts
    assert local["default-resources.slurm_partition"] == "local"  # start_slurm.sh's partition


# ------------------------------------------------------------- the cluster


def _cluster_missing() -> str | None:
    if os.environ.get("ISVM_SLURM") != "1":
        return (
            "no SLURM cluster: ISVM_SLURM is not 1 "
            "(tests/cluster/run_cluster_tests.sh starts one and runs these tests)"
        )
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no SLURM cluster: sinfo/sbatch not found"
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    usable = ("idle", "mixed", "allocated")
    if proc.returncode != 0 or not any(s.rstrip("*~#") in usable for s in proc.stdout.split()):
        return f"no SLURM cluster: sinfo answers {proc.stdout.strip() or proc.stderr.strip()!r}"
    return None


@pytest.fixture(scope="module")
def cluster():
    reason = _cluster_missing()
    if reason:
        print(f"SKIPPED: {reason}", file=sys.stderr)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def local_run(cluster, tmp_path_factory) -> Path:
    """A local run of the smoke config (the reference): ISVM_SLURM_LOCAL_RUN or a fresh one."""
    given = os.environ.get("ISVM_SLURM_LOCAL_RUN")
    if given:
        workdir = Path(given)
        tables = workdir / "results" / "smoke" / "tables"
        assert tables.is_dir(), f"no {tables}"
        _say(f"local reference: {workdir} (ISVM_SLURM_LOCAL_RUN)")
        return workdir
    workdir = tmp_path_factory.mktemp("local")
    _say(f"local reference run of the smoke config in {workdir} ...")
    start = time.perf_counter()
    proc = subprocess.run(
        _snakemake_cmd(workdir, "--workflow-profile", PROFILES / "default", "--cores", 2),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=_env(),
    )
    seconds = time.perf_counter() - start
    (workdir / "snakemake.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"the local run failed:\n{_tail(proc.stdout + proc.stderr)}"
    _say(f"local run: {seconds:.0f} s")
    _record("local_wall_s", round(seconds))
    return workdir


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory) -> SlurmRun:
    """The smoke config through SLURM with the slurm-local profile, from scratch."""
    workdir = tmp_path_factory.mktemp("slurm")
    _say(f"smoke config through SLURM in {workdir} ...")
    start = time.perf_counter()
    proc = subprocess.run(
        _snakemake_cmd(workdir, "--workflow-profile", LOCAL_PROFILE),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=_env(),
    )
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (workdir / "snakemake.log").write_text(log)
    run = SlurmRun(workdir, log, proc.returncode, seconds)
    _say(f"SLURM run: exit {proc.returncode}, {len(run.submissions)} SLURM jobs, {seconds:.0f} s")
    return run


@pytest.mark.cluster
def test_smoke_config_through_slurm_matches_the_local_run(slurm_run, local_run):
    run = slurm_run
    assert run.returncode == 0, f"the SLURM run failed:\n{_tail(run.log)}"
    assert run.run_id, "no 'SLURM run ID' in the log: was the slurm executor used?"
    assert run.submissions, "no job was submitted through SLURM"
    assert len(run.slurm_ids) == len(run.submissions), "a SLURM job id was reported twice"

    # SLURM's own records: every job the plugin submitted ran under the run's
    # job name and COMPLETED.
    states = slurm_states(run.run_id, run.slurm_ids)
    missing = sorted(run.slurm_ids - set(states), key=int)
    assert not missing, f"SLURM has no record of jobs {missing}"
    not_completed = {i: s for i, s in states.items() if s != "COMPLETED"}
    assert not not_completed, f"SLURM jobs that did not complete: {not_completed}"

    # The LOO grid ran in SLURM jobs (batched by the profile's group), not locally.
    assert re.search(r"group_loo_batch", run.log), "no loo_batch group was submitted"
    assert not re.search(r"^localrule loo:", run.log, re.M), "loo jobs ran on the submit host"
    loo_jobs = len(list((run.workdir / "results" / "smoke" / "loo").rglob("*.parquet")))

    n_tables = assert_tables_identical(local_run, run.workdir)
    _say(
        f"SLURM: {len(run.submissions)} jobs submitted (SLURM ids "
        f"{min(map(int, run.slurm_ids))}-{max(map(int, run.slurm_ids))}, {loo_jobs} LOO jobs in "
        f"the loo_batch groups), {run.seconds:.0f} s; {n_tables} tables byte-identical "
        "to the local run"
    )
    _record("jobs_submitted", len(run.submissions))
    _record("loo_jobs", loo_jobs)
    _record("slurm_wall_s", round(run.seconds))
    _record("tables_identical", n_tables)


def _wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen, log: Path):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended before {what}:\n{_tail(log.read_text())}")
        time.sleep(0.5)
    proc.terminate()
    pytest.fail(f"timed out waiting for {what}:\n{_tail(log.read_text())}")


@pytest.mark.cluster
def test_a_loo_job_killed_by_scancel_is_reported_and_retried(slurm_run, local_run, tmp_path):
    assert slurm_run.returncode == 0, "the SLURM smoke run failed (see the test above)"
    # A copy of the finished SLURM run without one data set's LOO records (and
    # logs) and without the tables and figures: a loo_batch job with that data
    # set's chunks, the tables and the figures run again (snakemake does not redo
    # a missing intermediate file whose consumers are up to date).
    workdir = tmp_path / "scancel"
    shutil.copytree(slurm_run.workdir, workdir, symlinks=True)
    redo = Path("zscore") / "iris"  # records and logs are kept per feature scaling
    run_dir = workdir / "results" / "smoke"
    loo_logs = run_dir / "logs" / "loo" / redo
    assert loo_logs.is_dir(), f"no LOO logs under {workdir}"
    # .staging: the built tables and figures (rule publish copies them to tables/ ...)
    for path in (
        run_dir / "loo" / redo,
        loo_logs,
        *(run_dir / d for d in ("tables", "timing", "figures", ".staging")),
    ):
        shutil.rmtree(path)
    log = workdir / "scancel-run.log"

    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(
            _snakemake_cmd(workdir, "--workflow-profile", LOCAL_PROFILE, "--retries", 1),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
        )
    try:
        run_id = _wait_for(
            lambda: (m := RUN_ID.search(log.read_text())) and m.group(1),
            120,
            "the SLURM run ID",
            proc,
            log,
        )

        def running_loo_batch():
            # a loo_batch job RUNNING in SLURM whose LOO commands have started
            out = subprocess.run(
                ["squeue", "--noheader", "--states=RUNNING", "--format=%i|%k", "--name", run_id],
                capture_output=True,
                text=True,
            ).stdout
            jobs = [line.split("|", 1) for line in out.split()]
            if not list(loo_logs.rglob("*.log")):
                return None
            return next((jid for jid, comment in jobs if "loo" in comment), None)

        victim = _wait_for(running_loo_batch, 300, "a running loo_batch job", proc, log)
        subprocess.run(["scancel", victim], check=True)
        _say(f"scancel {victim} (a running loo_batch job of run {run_id})")
        proc.wait(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
    seconds = time.perf_counter() - start
    text = log.read_text()
    assert proc.returncode == 0, f"the run with a cancelled job failed:\n{_tail(text)}"

    # Snakemake reported the cancelled job (for a group the plugin's "SLURM-job
    # ... CANCELLED" message is folded into "Error in group"; show-failed-logs
    # prints SLURM's own log of it) and submitted the same group again.
    submissions = SUBMITTED.findall(text)
    group = next(job for job, sid in submissions if sid == victim)
    reported = re.search(rf"SLURM-job '{victim}' failed, SLURM status is: 'CANCELLED'", text) or (
        re.search(rf"Error in group loo_batch\n\s+log: \S+/{victim}\.log", text)
    )
    assert reported, f"Snakemake did not report SLURM job {victim} as failed:\n{_tail(text)}"
    assert re.search(rf"JOB {victim} ON \S+ CANCELLED", text), (
        f"SLURM's cancellation of job {victim} is not in Snakemake's log"
    )
    assert f"Trying to restart job {group}" in text, f"no retry of {group}:\n{_tail(text)}"
    resubmitted = [sid for job, sid in submissions if job == group and sid != victim]
    assert resubmitted, f"the cancelled group {group} was not submitted again"
    states = slurm_states(run_id, {sid for _, sid in submissions})
    assert states.get(victim) == "CANCELLED", f"SLURM's record of {victim}: {states.get(victim)}"
    assert states.get(resubmitted[-1]) == "COMPLETED"
    assert all(states.get(sid) == "COMPLETED" for _, sid in submissions if sid != victim)

    n_tables = assert_tables_identical(local_run, workdir)
    _say(
        f"scancel/retry: SLURM job {victim} cancelled, reported, resubmitted as "
        f"{', '.join(resubmitted)}; {len(submissions)} submissions, {seconds:.0f} s; "
        f"{n_tables} tables unchanged"
    )
    _record(
        "scancel",
        {
            "cancelled": victim,
            "resubmitted_as": resubmitted,
            "submissions": len(submissions),
            "wall_s": round(seconds),
        },
    )
