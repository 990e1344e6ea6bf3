"""Starting, resuming and promoting a run in its folder (the files: argent/runs/folder.py).

A fresh run into a folder that holds a run is staged in ``.staging/`` until it has finished, so a
re-run that fails never leaves a finished run's files beside a new config; ``promote`` then moves
the old files aside, the new ones in, and deletes the old last (see docs/reliability.md).
``resume_state`` decides what a start continues from (the folder's checkpoint, the staged one, or
nothing), once for every rank under torch.distributed.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist

from argent.config.experiment import CARRIED_VERSIONS, IDENTITY_VERSION
from argent.io import ArgentError, read_json
from argent.runs.fingerprint import Change, record_difference
from argent.runs.folder import CheckpointError, ResumeMismatch, check_hash, read_checkpoint, stamped_version
from argent.runs.layout import CHECKPOINT, RunFolder

log = logging.getLogger("argent.runs")


def clean_stale(run: RunFolder) -> None:
    """A promotion cut short (finished first, ``finish_promotion``), temp files of a writer killed
    mid-write, and a staged run that stopped before its first checkpoint (nothing to resume from). A
    staged run with a checkpoint is kept: ``resume_state`` continues it, or discards it when the
    config changed (never a finished one: it is promoted here)."""
    finish_promotion(run)
    for folder in (run, run.staging):
        for path in folder.stale_temp_files():
            log.warning("%s: removing a temp file left by a killed write", path)
            path.unlink(missing_ok=True)
    if run.staging.root.exists() and not run.staging.checkpoint.exists() and not run.staging.summary.exists():
        log.warning("%s: removing the staging folder of an earlier run that stopped before its first "
                    "checkpoint", run.staging.root)
        shutil.rmtree(run.staging.root)


def holds_a_run(run: RunFolder) -> bool:
    """Whether the folder holds an earlier run (finished or not): a fresh run is then staged beside
    it until the fresh one has finished."""
    return any(p.exists() for p in (run.config, run.checkpoint, run.summary))


class Inputs(Protocol):
    """The files a run reads (argent.data.inputs.RunInputs): their fingerprints now, and a file's path."""

    def record(self, known: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def path_of(self, kind: str, name: str) -> str: ...


def inputs_changed(state: dict[str, Any], inputs: Inputs | None) -> Change | None:
    """How the files the checkpoint's run read (its ``inputs`` record) differ from those there now (a
    negatives table edited in place, a shard replaced under its name); None when the same, when the
    checkpoint records none (stamped before fingerprints) or when no files are read (``inputs`` None)."""
    recorded = state.get("inputs")
    if inputs is None or not isinstance(recorded, dict):
        return None
    return record_difference(recorded, inputs.record(recorded), inputs.path_of)


def set_aside(checkpoint: Path, err: BaseException, folder: Path | None = None, label: str = "corrupt") -> Path:
    """Move a damaged checkpoint aside under a name that says so (``checkpoint.pt.corrupt-<time>`` in the
    run's folder; never deleted); returns where it went (the caller says so, and what follows)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside, n = (folder or checkpoint.parent) / f"{CHECKPOINT}.{label}-{stamp}", 1
    while aside.exists():  # two in one second (a staged one and the folder's): keep both
        aside, n = aside.with_name(f"{CHECKPOINT}.{label}-{stamp}-{n}"), n + 1
    os.replace(checkpoint, aside)
    return aside


def resume_state(run: RunFolder, resume: str, config_hash: str, device: torch.device,
                 is_main: bool = True, inputs: Inputs | None = None) -> tuple[dict[str, Any] | None, RunFolder]:
    """(the checkpoint to continue from or None to start fresh, the folder it came from: the run's
    own or its ``.staging/``, where a re-run of a folder that holds a run trains until it finishes).
    Readability and the config hash are checked before anything else; ``auto`` moves an unreadable
    checkpoint aside (kept) and says so. ``inputs``: the files the run reads; a checkpoint whose run read
    other bytes (``inputs_changed``) is not continued: ``auto`` trains from scratch (staged beside a
    finished run), ``strict`` refuses naming the file.

    Under torch.distributed (a collective then: every rank calls it) rank 0 alone decides, moving a
    corrupt checkpoint aside if it must, and broadcasts the decision before any other rank reads the
    file: every rank resumes from the same checkpoint, starts fresh, or stops with rank 0's error.
    """
    if resume == "no":
        return None, run
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return _decide_resume(run, resume, config_hash, device, inputs)
    decision: list[Any] = [None]
    state, folder = None, run
    if is_main:
        try:
            state, folder = _decide_resume(run, resume, config_hash, device, inputs)
            decision[0] = ("fresh", "") if state is None else ("resume", "staged" if folder != run else "")
        except BaseException as err:
            decision[0] = ("error", str(err))
            dist.broadcast_object_list(decision, src=0)  # the other ranks stop too, rather than wait
            raise
    dist.broadcast_object_list(decision, src=0)
    kind, message = decision[0]
    if kind == "error":
        raise CheckpointError(f"{message} (decided by rank 0)")
    if kind == "fresh" or is_main:
        return state, folder
    folder = run.staging if message == "staged" else run
    state = read_checkpoint(folder.checkpoint, device)
    check_hash(folder.checkpoint, state, config_hash, folder.config)  # rank 0 checked the same file
    return state, folder


def _decide_resume(run: RunFolder, resume: str, config_hash: str, device: torch.device,
                   inputs: Inputs | None = None) -> tuple[dict[str, Any] | None, RunFolder]:
    """``resume_state`` for one process (or rank 0)."""
    staged = _staged_state(run, config_hash, device, inputs)
    if staged is not None:
        return staged, run.staging
    if not run.checkpoint.exists():
        if resume == "strict":
            raise CheckpointError(f"{run.checkpoint}: --resume strict, but there is no checkpoint to continue from; "
                                  f"drop --resume to start fresh (or use --resume auto)")
        return None, run
    try:
        state = read_checkpoint(run.checkpoint, device)
    except CheckpointError as err:
        if resume == "strict":
            raise
        aside = set_aside(run.checkpoint, err)
        log.warning("%s; moved it to %s (kept, not deleted). No earlier good checkpoint of this run is kept: "
                    "training from scratch", str(err).split("; retrain")[0], aside)
        return None, run
    if state.get("config_hash") != config_hash:
        if resume == "auto":
            log.info("%s: checkpoint config differs from the current config; training from scratch", run.checkpoint)
            return None, run
        legacy = (f" It carries a hash of before run identity v{IDENTITY_VERSION}: if the config is the same, "
                  f"re-stamp it first (argent restamp --run {run.root} --config <the workflow config>)."
                  if stamped_version(state, run.config) in CARRIED_VERSIONS else "")
        raise ResumeMismatch(
            f"{run.checkpoint}: made with config hash {state.get('config_hash')}, the config now hashes to "
            f"{config_hash}; a setting that changes the result differs. Diff {run.config} against your "
            f"config, or train into a new folder.{legacy}"
        )
    changed = inputs_changed(state, inputs)
    if changed is not None:
        if resume == "strict":
            raise ResumeMismatch(
                f"{run.checkpoint}: its run read other data than there is now: {changed.line()}. The identity hash "
                f"names the data, not its bytes; continuing would mix two data sets in one run. Restore the data, or "
                f"retrain on the data as it is now (--resume auto, or the workflow, trains it afresh beside the "
                f"finished files, which stay until the new run finishes)")
        log.warning("%s: its run read other data than there is now: %s; training from scratch on the data as it "
                    "is now (the folder's run stays until the new one finishes)", run.checkpoint, changed.line())
        return None, run
    log.info("%s: resuming from its checkpoint (step %s)", run.checkpoint, state.get("step"))
    return state, run


def _staged_state(run: RunFolder, config_hash: str, device: torch.device,
                  inputs: Inputs | None = None) -> dict[str, Any] | None:
    """The checkpoint of a re-run staged beside the folder's run, when it trains the config asked
    for now on the same data; a staged run of another config or other data is discarded, an unreadable
    checkpoint set aside first (the folder's own run, the one to keep, is not touched)."""
    staged = run.staging
    if not staged.checkpoint.exists():
        return None
    try:
        state = read_checkpoint(staged.checkpoint, device)
    except CheckpointError as err:
        aside = set_aside(staged.checkpoint, err, run.root, "staged-corrupt")  # out of .staging/, which goes
        log.warning("%s; moved it to %s (kept, not deleted) and discarded the rest of the staged re-run in %s; "
                    "the folder's own checkpoint decides what follows (resumed if it is this config's, else "
                    "training from scratch)", str(err).split("; retrain")[0], aside, staged.root)
        shutil.rmtree(staged.root)
        return None
    changed = inputs_changed(state, inputs) if state.get("config_hash") == config_hash else None
    if changed is not None and not finished(staged):
        log.info("%s: a staged re-run that read other data than there is now (%s); discarding it", staged.root,
                 changed.line())
        shutil.rmtree(staged.root)
        return None
    if state.get("config_hash") != config_hash:
        if finished(staged):  # never discarded (clean_stale promotes it; here another rank's view)
            log.warning("%s: a finished staged run of another config; kept (the next start promotes it)", staged.root)
            return None
        log.info("%s: a staged re-run of another config; discarding it", staged.root)
        shutil.rmtree(staged.root)
        return None
    log.info("%s: continuing the staged re-run (the finished files of %s stay until it finishes)",
             staged.root, run.root)
    return state


# The run's files, in the order a promotion moves the staged ones in: summary.json last (it marks a
# finished run), so a folder without it is unfinished, whatever instant a kill hits.
PROMOTED = ("config", "metrics", "provenance", "curves", "checkpoint", "summary")


def finished(run: RunFolder) -> bool:
    """Whether the folder's summary.json says a run finished there (a summary with a config hash)."""
    try:
        return bool(read_json(run.summary).get("config_hash")) if run.summary.is_file() else False
    except (ArgentError, AttributeError):  # torn, or not a mapping
        return False


def promote(staging: RunFolder, run: RunFolder) -> None:
    """Move a staged re-run into its folder once it has *finished* (its summary written), so that a
    kill at any instant leaves the old run whole or the new one whole, and the next start
    (``finish_promotion``) tells which and finishes the job:

    1. the old run's files move to ``.replacing/`` (summary first), which is then renamed
       ``.replaced/``: from here on the old run is whole aside and the staged run is the one to keep;
    2. the staged files move in, summary last (the staged folder keeps the rest until then);
    3. ``.staging/`` and then ``.replaced/`` (the old run) are deleted.

    Idempotent: called again after a kill at any point, it completes the same promotion."""
    if not run.replaced.root.exists():
        run.replacing.root.mkdir(exist_ok=True)  # may hold files already moved by a promotion cut short
        for name in ("summary", *PROMOTED[:-1]):
            old = getattr(run, name)
            if old.exists():
                os.replace(old, getattr(run.replacing, name))
        _fsync_dir(run.replacing.root)
        os.replace(run.replacing.root, run.replaced.root)  # atomic: the old run is aside, whole
        _fsync_dir(run.root)
    for name in PROMOTED:
        src = getattr(staging, name)
        if src.exists():
            os.replace(src, getattr(run, name))
    _fsync_dir(run.root)
    shutil.rmtree(staging.root, ignore_errors=True)
    shutil.rmtree(run.replaced.root, ignore_errors=True)


def finish_promotion(run: RunFolder) -> bool:
    """Finish a promotion a kill cut short, or start one a kill prevented (a staged run that finished,
    its summary written, not yet moved in). A finished staged run is never discarded: whatever config
    the next start trains, it is promoted first (that start then treats it as the folder's run).
    Returns whether it promoted."""
    pending = run.replacing.root.exists() or run.replaced.root.exists()
    staged_done = finished(run.staging)
    if not (pending or staged_done):
        return False
    if run.replacing.root.exists() and not staged_done:
        # Old files moved aside with no finished staged run to move in (promote never does this): put them back.
        log.warning("%s: earlier run's files found half moved aside in %s with nothing to replace them; "
                    "putting them back", run.root, run.replacing.root)
        for name in PROMOTED:
            if getattr(run.replacing, name).exists() and not getattr(run, name).exists():
                os.replace(getattr(run.replacing, name), getattr(run, name))
        shutil.rmtree(run.replacing.root, ignore_errors=True)
        return False
    if staged_done:
        log.warning("%s: the staged run in %s finished but was not (wholly) moved in; promoting it now: it "
                    "replaces the folder's earlier run", run.root, run.staging.root)
    else:
        log.warning("%s: finishing a promotion that was cut short after the new run moved in (removing the "
                    "earlier run's files in %s)", run.root, run.replaced.root)
    promote(run.staging, run)
    return True


def _fsync_dir(path: Path) -> None:
    """Make the renames in a folder durable (a crash of the machine, not only of the process)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
