"""What the DAG build checks of the bytes a finished run read (argent/runs/fingerprint.py), and of the
folders a config names before Snakemake looks at them.

``content_mismatches``: a finished run the plan trains whose ``summary.json`` records the fingerprints
of the files it read (``inputs``) is compared with the files its config names now: a shard replaced
under its name, a negatives table edited in place, the embedded data regenerated. A difference is a
``ContentMismatch``: the DAG writes the run an identity marker (``Dag.identity_inputs``), so Snakemake
retrains it, and the trainer, whose checkpoint records the same fingerprints, trains it afresh instead
of answering "already finished" (argent/runs/staging.py). A summary without ``inputs`` (a run stamped
before fingerprints existed) is not compared: it is never re-planned for lack of one. Planning reads
no data beyond a ``stat`` per file, save at most ``PLAN_REHASH`` files whose size is kept and whose
time changed (their digest settles it: a copy is not a change).

``declared_hash_refusals``: the data a config's groups train on, where their data set's manifest records
the ``dataset_hash`` it was built as, must be the data the config declares (argent/data/inputs.py).
``results_problem``: ``results:`` naming a file (Snakemake's own scan of the folder failed with a
``NotADirectoryError`` traceback).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.config import ConfigError, WorkflowConfig
from argent.config.groups import RunKey
from argent.data.inputs import declared_hash_problem
from argent.data.policy import BadDataError
from argent.data.shards import expand_shards
from argent.io import ArgentError, write_text_if_changed
from argent.plan.groups import Plan
from argent.plan.targets import IdentityMismatch
from argent.runs import SUMMARY, run_dir
from argent.runs.documents import read_object
from argent.runs.fingerprint import PLAN_REHASH, Change, compare, read_record

__all__ = ["ContentMismatch", "content_mismatches", "declared_hash_refusals", "results_problem"]


@dataclass(frozen=True)
class ContentMismatch(IdentityMismatch):
    """A finished run whose recorded input fingerprints differ from the files there now."""

    change: Change | None = None

    def line(self) -> str:
        return (f"argent: {self.folder}: its run read other data than there is now: "
                f"{self.change.line() if self.change else '?'}; retrained on the data as it is now (the run keeps "
                f"its identity hash {self.planned}, which names the data, not its bytes; the new run is staged, "
                f"the finished files stay until it finishes)")


def _absolute(path: str, root: Path) -> str:
    return path if not path or os.path.isabs(path) else str(root / path)


def _current_files(kind: str, recorded: dict[str, Any], gcfg: WorkflowConfig, root: Path) -> list[Path] | None:
    """The files of ``kind`` the group's config names now (None: nothing to compare with: no data there
    yet, which the workflow makes or the trainer names)."""
    data = gcfg.data
    if kind == "train_shards":
        pattern = _absolute(str(data.train_shards or ""), root)
        try:
            return expand_shards(pattern) if pattern else None
        except BadDataError:
            return None
    if kind == "negatives":
        configured = _absolute(str(data.negatives or ""), root)
        if not configured:
            return None
        base = Path(configured)
        files = [base / name for name in recorded] if base.is_dir() else [base]
        return files if any(f.exists() for f in files) else None
    return None


def content_mismatches(plan: Plan, root: Path, results: Path, skip: set[RunKey] = frozenset()
                       ) -> dict[RunKey, ContentMismatch]:
    """The finished runs (``skip``: those already stale for their hash) whose recorded inputs differ
    from the files there now (module doc). Reads each summary; compares each distinct record once."""
    compared: dict[tuple[str, str, str], Change | None] = {}
    out: dict[RunKey, ContentMismatch] = {}
    for key in plan.trained:
        if key in skip:
            continue
        folder = run_dir(results, key.group, key.variant, key.size, key.seed)
        summary = folder / SUMMARY
        try:
            stat = summary.stat()
            stamp = read_object(summary, "a run summary")
        except (OSError, ArgentError):
            continue  # unfinished, absent or unreadable: the identity check (targets.py) says what is done
        inputs, found = stamp.get("inputs"), str(stamp.get("config_hash"))
        if not isinstance(inputs, dict):
            continue  # stamped before fingerprints: never re-planned for lack of them
        gcfg = plan.workflow(key.group)
        for kind in sorted(inputs):
            recorded = read_record(inputs[kind])
            if recorded is None:
                continue
            files = _current_files(kind, recorded, gcfg, root)
            if files is None:
                continue
            memo = (kind, json.dumps(sorted(map(str, files))), json.dumps(inputs[kind], sort_keys=True))
            if memo not in compared:
                compared[memo] = compare(recorded, files, rehash_limit=PLAN_REHASH)
            change = compared[memo]
            if change is not None:
                out[key] = ContentMismatch(key, str(folder), found, found, stat.st_mtime_ns, None, change)
                break
    return out


def declared_hash_refusals(plan: Plan, root: Path) -> list[str]:
    """One line per training data of the active groups whose data set records another ``dataset_hash``
    than the config declares (argent/data/inputs.py ``declared_hash_problem``); present data only."""
    problems: dict[str, str] = {}
    for group in plan.configs:
        data = plan.workflow(group).data
        pattern = _absolute(str(data.train_shards or ""), root)
        if not pattern or pattern in problems:
            continue
        try:
            shards = expand_shards(pattern)
        except BadDataError:
            continue  # not there yet (the workflow makes it) or named by the preflight
        problem = declared_hash_problem(shards, str(data.dataset_hash or ""))
        if problem:
            problems[pattern] = f"groups.{group}: {problem}" if group != "main" else problem
    return list(problems.values())


def results_problem(results: Path) -> str | None:
    """Why ``results:`` cannot be the results folder (it, or a folder above it, is a file); None when it can."""
    for path in (results, *results.parents):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                what = "is" if path == results else f"lies in {path}, which is"
                return (f"results: {results} {what} a file, not a folder; point results: at a folder (it is "
                        f"created when absent)")
            return None
    return None


def refuse_unusable(workflow: WorkflowConfig, plan: Plan, root: Path) -> None:
    """The DAG build's refusals of this module, as one ``ConfigError`` (nothing is planned past them)."""
    results = Path(str(workflow.results))
    problems = [p for p in [results_problem(results if results.is_absolute() else root / results)] if p]
    problems += declared_hash_refusals(plan, root)
    if problems:
        raise ConfigError("\n  ".join(problems))


def write_marker(marker: Path, stale: Any) -> str:
    """A stale run's identity marker (its mismatch, ``stale.line()``), newer than the run's summary so that
    Snakemake retrains it (``Dag.identity_inputs``); the same text again is made newer all the same."""
    write_text_if_changed(marker, stale.line() + "\n")
    if marker.stat().st_mtime_ns <= stale.summary_mtime_ns:  # same text as before: make it newer
        newer = max(time.time_ns(), stale.summary_mtime_ns + 1_000_000_000)
        os.utime(marker, ns=(newer, newer))
    return str(marker)
