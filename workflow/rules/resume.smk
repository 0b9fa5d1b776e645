# Resume after a hard kill (SIGKILL, out-of-memory kill, power loss): remove the
# locks a killed snakemake run of this directory left, and only those; see
# workflow/lib/locks.py. Runs in the main process while the Snakefile is parsed,
# which is before Snakemake checks and takes its lock (Workflow.execute).

import importlib.util
import sys
from pathlib import Path

from snakemake.logging import logger


def _load_locks():
    """workflow/lib/locks.py, loaded by its path (it imports only the standard library)."""
    path = Path(workflow.basedir) / "workflow" / "lib" / "locks.py"
    spec = importlib.util.spec_from_file_location("_isvm_locks", path)
    locks = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = locks
    spec.loader.exec_module(locks)
    return locks


if workflow.is_main_process:
    _locks = _load_locks()
    _locks.remove_stale_locks(warn=logger.warning)
    _locks.record_owner()
