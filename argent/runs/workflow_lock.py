"""One Snakemake per results folder: the lock a workflow's main process holds on its results folder
(``Results.workflow_lock``) for as long as it runs, taken before the DAG build writes anything, so that a second
Snakemake on the same ``results:`` (another clone's) stops at once, naming the first, instead of replacing the
first's logs. Torch-free: the Snakefile takes it while it parses (workflow/rules/common.smk).
"""

from __future__ import annotations

import atexit
import socket
from pathlib import Path

from argent.io import ArgentError, HeldLock, describe_holder
from argent.runs.layout import Results

_HELD: dict[Path, HeldLock] = {}  # this process's workflow locks: a second parse in it re-uses its own


class WorkflowBusy(ArgentError):
    """Another Snakemake runs this results folder."""


def hold_workflow(results: str | Path, what: str, dry_run: bool = False) -> str | None:
    """Hold ``results``' workflow lock (``Results.workflow_lock``) for the life of this process (released at exit,
    by the kernel if the process dies). Another live holder: ``WorkflowBusy`` naming it, before anything in
    the folder is touched (its logs included). Returns a line to print, or None: a record left by a
    dead process of this host is taken over, saying so; ``dry_run`` takes nothing and only warns
    when the folder is busy."""
    path = Results(Path(results).absolute()).workflow_lock
    if path in _HELD or (dry_run and not path.exists()):
        return None
    lock = HeldLock(path)
    busy = not lock.try_lock()
    left = lock.record()
    if busy or dry_run:
        lock.close()  # a dry run takes nothing (closing the descriptor drops a flock it took)
    if busy and dry_run:
        return f"note: another Snakemake is running {results} ({describe_holder(left)}); this dry run shows what " \
               f"it would do as of now"
    if busy:
        raise WorkflowBusy(f"{results}: another Snakemake is running this results folder ({describe_holder(left)}; "
                           f"lock {path}); stopped before touching anything. Let it finish (or stop it), or give this "
                           f"one another results: folder")
    if dry_run:
        return None
    if left and left.get("host") != socket.gethostname():
        lock.close()  # its flock may not reach this host (some shared file systems lock per node)
        raise WorkflowBusy(f"{results}: {path} names {describe_holder(left)}, on another host; if that Snakemake "
                           f"still runs, let it finish; if it ended without releasing the lock (killed), delete "
                           f"{path} and run again")
    lock.write_record(what)
    _HELD[path] = lock
    atexit.register(lock.release)  # the record names no holder once this process ends
    return f"took over {path}: {describe_holder(left)} ended without releasing it" if left else None
