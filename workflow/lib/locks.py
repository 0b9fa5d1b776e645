"""Resume after a hard kill: remove Snakemake's locks only when their owner is provably dead.

Snakemake keeps its locks in .snakemake/locks while it runs and removes them when it
ends; a SIGKILL, an out-of-memory kill or a power loss leaves them behind and the
next run stops with "Directory cannot be locked". workflow/rules/resume.smk calls
:func:`record_owner` in every snakemake main process while the Snakefile is parsed,
i.e. before Snakemake checks and takes its lock: the process leaves a record of
itself (host, pid, process start time, boot id) in .snakemake/isvm-owners/ and
removes it when it exits (also after Ctrl-C or a failed job; not after SIGKILL).
Before that, :func:`remove_stale_locks` removes the locks only when records exist,
every one of them is from this host, and every one's process is provably gone: no
such pid, the pid now belongs to a process that started later, or the machine has
rebooted since. A lock of a live process, of another host (a shared file system),
or one with no record is left alone, and Snakemake's LockException stands.

Standard library only: the Snakefile loads this file by its path.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
from pathlib import Path

#: records of the snakemake processes of this directory (relative to the working directory)
OWNERS = Path(".snakemake") / "isvm-owners"
#: Snakemake's own lock files (its default file persistence)
LOCKS = Path(".snakemake") / "locks"
HOST = socket.gethostname()


def _boot_id():
    """This boot's id (Linux), '' where unknown."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid):
    """Start time of process ``pid`` in clock ticks since boot (Linux), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22 of proc_pid_stat(5)


def _is_dead(owner):
    """Whether the process of an owner record provably no longer runs."""
    if owner.get("host") != HOST:
        return False  # another machine: cannot tell
    if owner.get("boot_id") and _boot_id() and owner["boot_id"] != _boot_id():
        return True  # rebooted since (a power loss)
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, another user's
    start = _start_time(owner["pid"])
    return start is not None and owner.get("start") is not None and start != owner["start"]


def remove_stale_locks(warn=print):
    """Remove Snakemake's locks if all their possible owners are provably dead."""
    records = sorted(OWNERS.glob("*.json")) if OWNERS.is_dir() else []
    dead = []
    for path in records:
        try:
            owner = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # unreadable: cannot tell, counts as alive
        if _is_dead(owner):
            dead.append((path, owner))
    locks = sorted(LOCKS.glob("*.lock")) if LOCKS.is_dir() else []
    if locks and dead and len(dead) == len(records):
        for lock in locks:
            lock.unlink(missing_ok=True)
        pids = ", ".join(str(owner["pid"]) for _, owner in dead)
        warn(
            f"Removed the locks of an earlier snakemake run here (pid {pids} on {HOST}) "
            "that ended without releasing them (killed); finished jobs are kept."
        )
    for path, _ in dead:
        path.unlink(missing_ok=True)


def record_owner():
    """Record this process as a possible lock owner until it exits."""
    OWNERS.mkdir(parents=True, exist_ok=True)
    # absolute: snakemake changes back to the directory it was started in before exiting
    path = Path.cwd() / OWNERS / f"{HOST}-{os.getpid()}.json"
    owner = {
        "host": HOST,
        "pid": os.getpid(),
        "start": _start_time(os.getpid()),
        "boot_id": _boot_id(),
        "argv": sys.argv,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(owner))
    os.replace(tmp, path)
    atexit.register(lambda: path.unlink(missing_ok=True))
