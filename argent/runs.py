"""Reading and writing a run folder (its layout: argent/layout.py).

A run folder ``<results>/runs/<group>/<variant>-<size>/seed<k>/`` holds:

- ``config.yaml``: the fully resolved ``ExperimentConfig``;
- ``metrics.jsonl``: every logged number, one JSON record per line (a torn last line, left by a
  killed writer, is dropped with a warning);
- ``checkpoint.pt``: model, optimiser, scheduler, step, RNG states and the config hash (atomic);
- ``provenance.json``: what the run ran on (torch, CPU capability, GPU, BLAS, threads, determinism),
  outside its identity: numbers reproduce bit for bit only on the same hardware class;
- ``summary.json``: written last; its presence means the run finished.

A fresh run into a folder that holds a run is staged in ``.staging/`` until it has finished, so a
re-run that fails never leaves a finished run's files beside a new config; ``promote`` then moves
the old files aside, the new ones in, and deletes the old last (see docs/reliability.md). One
process writes a folder at a time (``hold_writer``: the trainer's rank 0, ``argent restamp``). Every
loader checks the checkpoint's config hash against ``config.yaml``; a checkpoint stamped before the
current run identity is named with its fix (``argent restamp``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import shutil
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml

from argent.config import IDENTITY_VERSION, ConfigError, ExperimentConfig, experiment_from_resolved
from argent.identity import legacy_hash
from argent.io import ArgentError, HeldLock, atomic_write_json, describe_holder, read_json
from argent.layout import CHECKPOINT, CONFIG, SUMMARY, RunFolder
from argent.models import DualEncoder, build_model

log = logging.getLogger("argent.runs")


class CheckpointError(ArgentError):
    """A checkpoint is unreadable (torn, zero bytes) or was made under another config."""


class ResumeMismatch(CheckpointError):
    """``--resume strict`` was asked for a checkpoint made under a config that changes the result."""


class RunNotFound(CheckpointError, FileNotFoundError):
    """The folder holds no run (no config.yaml) or no checkpoint yet."""


class RunFolderBusy(ArgentError):
    """Another process holds the run folder's writer lock."""


# ---- one writer per run folder ---------------------------------------------------------------


@contextlib.contextmanager
def hold_writer(run: RunFolder, what: str) -> Iterator[None]:
    """Hold the run folder's one-writer lock for the body (``flock`` on ``<run>/.writer.lock``,
    which holds the holder's pid, host, start time and verb while it is held). A second writer stops
    at once with ``RunFolderBusy`` naming the holder and the folder. The lock goes with the process:
    released on every exit of the body, and by the kernel when the holder dies (a lock file left by
    a dead process blocks nothing; its text is then stale and ignored). A lock file that is a
    symbolic or hard link is refused, never followed (argent.io.open_lock_file)."""
    run.root.mkdir(parents=True, exist_ok=True)
    lock = HeldLock(run.writer_lock)
    try:
        if not lock.try_lock():
            raise RunFolderBusy(f"{run.root}: another process is writing this run folder "
                                f"({describe_holder(lock.record())}; lock {run.writer_lock}); stopped before touching "
                                f"it, so the two cannot mix their files. Let it finish (or stop it), then run again")
        lock.write_record(what)
        try:
            yield
        finally:
            lock.release()  # the file names no holder
    finally:
        lock.close()


# ---- reading ---------------------------------------------------------------------------------


def write_provenance(run: RunFolder, record: dict[str, Any]) -> None:
    """What the run ran on (argent/engine/provenance.py), beside its identity, atomically."""
    atomic_write_json(run.provenance, record)


def read_provenance(run_dir: str | Path) -> dict[str, Any] | None:
    """A run's ``provenance.json``, or None for a run trained before runs recorded it."""
    path = RunFolder(Path(run_dir)).provenance
    return read_json(path) if path.is_file() else None


def hardware_class(record: dict[str, Any] | None) -> str:
    """What decides bit-for-bit equality of a run's numbers: CPU kernels, GPU and torch version."""
    if not record:
        return "not recorded"
    gpu = record.get("gpu") or "no GPU"
    return f"CPU {record.get('cpu_capability', '?')}, {gpu}, torch {record.get('torch', '?')}"


def hardware_classes(record: dict[str, Any] | None) -> list[str]:
    """Every hardware class a run trained on (a resumed run may have moved machines)."""
    if not record:
        return [hardware_class(None)]
    return sorted({hardware_class(r) for r in [record, *(record.get("earlier") or [])]})


def read_run_config(run_dir: str | Path) -> ExperimentConfig:
    path = RunFolder(Path(run_dir)).config
    if not path.is_file():
        raise RunNotFound(f"{path}: not a run folder (no {CONFIG}); train it with argent train")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CheckpointError(f"{path}: not valid YAML ({err}); retrain the run (argent train)") from None
    try:
        return experiment_from_resolved(data if isinstance(data, dict) else {})
    except ConfigError as err:
        raise CheckpointError(f"{path}: not a resolved run config ({err}); retrain the run") from None


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """metrics.jsonl records. A torn last line (a writer killed mid-line) is dropped with a warning;
    a bad line anywhere else is an error naming the file and line."""
    path = Path(path)
    if not path.is_file():
        return []
    lines = path.read_text(errors="replace").splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            if number == len(lines):
                log.warning("%s: line %d is torn (%s); dropped", path, number, err)
                break
            raise ArgentError(f"{path}: line {number} is not JSON ({err}); the file is damaged: delete the line "
                              f"or retrain the run") from None
    return rows


def read_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    """A checkpoint's state dict (``weights_only``); a missing, empty or torn file is a ``CheckpointError``."""
    path = Path(path)
    if not path.is_file():
        raise RunNotFound(f"{path}: no checkpoint here; train the run first (argent train)")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: checkpoint is empty (0 bytes; a write was cut off); "
                              f"retrain, or resume with --resume auto to move it aside and start fresh")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, KeyError) as err:
        raise CheckpointError(f"{path}: checkpoint is unreadable ({type(err).__name__}: {str(err)[:200]}); "
                              f"retrain, or resume with --resume auto to move it aside and start fresh") from None
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path}: not an argent checkpoint (no 'model' entry)")
    return state


def stamped_version(state: dict[str, Any], config_path: Path) -> int | None:
    """The identity version a checkpoint was stamped under: its record, 0 for a legacy stamp that
    matches the stored config (made before run identity existed), None when it matches nothing."""
    if "identity_version" in state:
        return int(state["identity_version"])
    return 0 if state.get("config_hash") == legacy_hash(RunFolder(config_path.parent).stored_config()) else None


def check_hash(path: Path, state: dict[str, Any], expected: str, config_path: Path) -> None:
    found = state.get("config_hash")
    if found == expected:
        return
    restamp = f"argent restamp --run {path.parent} --config <the workflow config>"
    version = stamped_version(state, config_path)
    if version is not None and 0 < version < IDENTITY_VERSION:
        raise CheckpointError(
            f"{path.parent}: stamped under run identity v{version}; v{IDENTITY_VERSION} changed what a config "
            f"value means (argent/config.py IDENTITY_VERSION), so the weights may not be what the config now "
            f"says. Retrain the run (argent train --out {path.parent}).")
    if version == 0:
        raise CheckpointError(
            f"{path.parent}: the checkpoint carries a config hash of before run identity v{IDENTITY_VERSION} "
            f"({found}); its weights do belong to {config_path.name}. Re-stamp the folder once: {restamp} "
            f"(or --results <folder> for every run); it checks that the config is the one the workflow "
            f"trains and rewrites the hash.")
    raise CheckpointError(
        f"{path}: made with config hash {found}, but {config_path} hashes to {expected}; the weights belong "
        f"to another config. Retrain the run (argent train --out {path.parent}), or restore the matching "
        f"{config_path.name}.")


def require_device(device: str | torch.device) -> None:
    """Fail before any work when the asked device is not there."""
    try:
        kind = torch.device(device).type
    except RuntimeError:  # torch's message lists every device type it knows; ours names the usual ones
        raise ArgentError(f"device {str(device)!r}: not a device; use cpu, cuda, cuda:<index> or mps") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ArgentError(f"device {str(device)!r}: no CUDA device is visible; use --device cpu / train.device: cpu")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ArgentError(f"device {str(device)!r}: MPS is not available; use cpu")


def load_model(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[DualEncoder, ExperimentConfig]:
    """The trained model of a run folder, in eval mode, and its resolved config. The checkpoint must
    have been made under that config (same result hash)."""
    model, cfg, _ = load_run(run_dir, device)
    return model, cfg


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[DualEncoder, ExperimentConfig, str]:
    """``load_model`` and why the run is unfinished ("" when finished: its evaluation must say so)."""
    folder = RunFolder(Path(run_dir))
    require_device(device)
    cfg = read_run_config(folder.root)
    state = read_checkpoint(folder.checkpoint, device)
    check_hash(folder.checkpoint, state, cfg.result_hash(), folder.config)
    # NaN/inf weights (a scalar such as log_curv = inf too) would be evaluated as chance, or fail the
    # result's JSON write after the whole benchmark: refused here, naming the entry.
    bad = next((k for k, v in state["model"].items() if torch.is_tensor(v) and v.is_floating_point()
                and not bool(torch.isfinite(v).all())), None)
    if bad is not None:
        raise CheckpointError(f"{folder.checkpoint}: model entry {bad!r} holds NaN or infinite values; these "
                              f"weights cannot be evaluated. Retrain the run (delete {folder.root}), or resume it "
                              f"from an earlier checkpoint")
    model = build_model(cfg.model, cfg.variant.geometry)
    model.load_state_dict(state["model"])
    step = f"step {int(state.get('step', 0))} of {cfg.train.steps}"
    unfinished = "" if folder.summary.is_file() else f"run unfinished: no {SUMMARY} ({step})"
    return model.to(device).eval(), cfg, unfinished


# ---- starting, resuming, promoting a staged run ------------------------------------------------


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


def resume_state(run: RunFolder, resume: str, config_hash: str, device: torch.device,
                 is_main: bool = True) -> tuple[dict[str, Any] | None, RunFolder]:
    """(the checkpoint to continue from or None to start fresh, the folder it came from: the run's
    own or its ``.staging/``, where a re-run of a folder that holds a run trains until it finishes).
    Readability and the config hash are checked before anything else; ``auto`` moves an unreadable
    checkpoint aside (kept) and says so.

    Under torch.distributed (a collective then: every rank calls it) rank 0 alone decides, moving a
    corrupt checkpoint aside if it must, and broadcasts the decision before any other rank reads the
    file: every rank resumes from the same checkpoint, starts fresh, or stops with rank 0's error.
    """
    if resume == "no":
        return None, run
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return _decide_resume(run, resume, config_hash, device)
    decision: list[Any] = [None]
    state, folder = None, run
    if is_main:
        try:
            state, folder = _decide_resume(run, resume, config_hash, device)
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


def _decide_resume(run: RunFolder, resume: str, config_hash: str,
                   device: torch.device) -> tuple[dict[str, Any] | None, RunFolder]:
    """``resume_state`` for one process (or rank 0)."""
    staged = _staged_state(run, config_hash, device)
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
        aside = run.checkpoint.with_name(f"{CHECKPOINT}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
        os.replace(run.checkpoint, aside)
        log.warning("%s. Moved it to %s (kept) and training from scratch.", err, aside)
        return None, run
    if state.get("config_hash") != config_hash:
        if resume == "auto":
            log.info("%s: checkpoint config differs from the current config; training from scratch", run.checkpoint)
            return None, run
        legacy = (f" It carries a hash of before run identity v{IDENTITY_VERSION}: if the config is the same, "
                  f"re-stamp it first (argent restamp --run {run.root} --config <the workflow config>)."
                  if stamped_version(state, run.config) == 0 else "")
        raise ResumeMismatch(
            f"{run.checkpoint}: made with config hash {state.get('config_hash')}, the config now hashes to "
            f"{config_hash}; a setting that changes the result differs. Diff {run.config} against your "
            f"config, or train into a new folder.{legacy}"
        )
    return state, run


def _staged_state(run: RunFolder, config_hash: str, device: torch.device) -> dict[str, Any] | None:
    """The checkpoint of a re-run staged beside the folder's run, when it trains the config asked
    for now; a staged run of another config, or an unreadable one, is discarded (the folder's own
    run, the one to keep, is not touched)."""
    staged = run.staging
    if not staged.checkpoint.exists():
        return None
    try:
        state = read_checkpoint(staged.checkpoint, device)
    except CheckpointError as err:
        log.warning("%s; discarding the staged re-run in %s", err, staged.root)
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
