"""Reading and writing a run folder's files (where they are: argent/runs/layout.py).

A run folder ``<results>/runs/<group>/<variant>-<size>/seed<k>/`` holds:

- ``config.yaml``: the fully resolved ``ExperimentConfig``;
- ``metrics.jsonl``: every logged number, one JSON record per line (a torn last line, left by a
  killed writer, is dropped with a warning);
- ``checkpoint.pt``: model, optimiser, scheduler, step, RNG states and the config hash (atomic);
- ``provenance.json``: what the run ran on (torch, CPU capability, GPU, BLAS, threads, determinism),
  outside its identity: numbers reproduce bit for bit only on the same hardware class;
- ``summary.json``: written last; its presence means the run finished.

One process writes a folder at a time (``hold_writer``: the trainer's rank 0, ``argent restamp``).
Every reader checks the checkpoint's config hash against ``config.yaml`` (``check_hash``); a
checkpoint stamped before the current run identity is named with its fix (``argent restamp``). A
re-run staged beside a finished run, and its promotion, are argent/runs/staging.py; the trained model
of a folder is ``argent.models.trained.load_model``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import pickle
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import yaml

from argent.config.convert import ConfigError
from argent.config.experiment import CARRIED_VERSIONS, IDENTITY_VERSION, ExperimentConfig, experiment_from_resolved
from argent.io import ArgentError, HeldLock, atomic_write_json, describe_holder, read_json
from argent.runs.identity import legacy_hash
from argent.runs.layout import CONFIG, RunFolder

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
    except (PermissionError, IsADirectoryError):
        raise  # not a damaged file: argent's boundary names the file and the fix (the file stays where it is)
    except (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, KeyError, OSError) as err:
        # A file cut short (a copy or a write stopped part-way: 5-65 KB of a checkpoint) fails inside torch's
        # zip reader, as an OSError "[Errno 22] Invalid argument" as often as a RuntimeError.
        raise CheckpointError(f"{path}: checkpoint is unreadable, damaged or cut short ({path.stat().st_size:,} "
                              f"bytes; {type(err).__name__}: {str(err)[:200]}); retrain, or resume with --resume "
                              f"auto to move it aside and start fresh") from None
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
    if version in CARRIED_VERSIONS:
        raise CheckpointError(
            f"{path.parent}: the checkpoint carries a config hash of run identity v{version} ({found}), "
            f"before v{IDENTITY_VERSION} changed how a config is hashed (argent/config/experiment.py IDENTITY_VERSION). "
            f"Re-stamp the folder once: {restamp} (or --results <folder> for every run); it checks that the "
            f"config is the one the workflow trains and that the weights belong to it, and rewrites the hash.")
    if version is not None and version < IDENTITY_VERSION:
        raise CheckpointError(
            f"{path.parent}: stamped under run identity v{version}; v{IDENTITY_VERSION} changed what a config "
            f"value means (argent/config/experiment.py IDENTITY_VERSION), so the weights may not be what the config now "
            f"says. Retrain the run (argent train --out {path.parent}).")
    raise CheckpointError(
        f"{path}: made with config hash {found}, but {config_path} hashes to {expected}; the weights belong "
        f"to another config. Retrain the run (argent train --out {path.parent}), or restore the matching "
        f"{config_path.name}.")
