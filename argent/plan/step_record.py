"""The measured step times: seconds per step per model size, from a results folder's finished training
jobs, with the machine and device they were measured on. Read back by the plan's cost
(argent/plan/cost.py): from the record file ``cost.step_times`` (default ``<results>/bench/step_times.json``,
written by ``argent plan --record-from RESULTS``: ``record_from_runs``), else straight from the results
folder's own finished training jobs (``live_record``: every finished training prices the next plan, with no
command to run); a record of another results folder beside it is offered, never used (``nearby_record``).
docs/scaling.md.
"""

from __future__ import annotations

import platform
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import ConfigError, check_range, from_dict
from argent.io import ReadError, atomic_write_json
from argent.runs import JobRecordError, Results, RunFolder, job_record_files, parse_run_job, read_job_record, run_dir
from argent.runs.documents import read_document
from argent.runs.layout import STEP_TIMES

RECORD = Path(STEP_TIMES)  # under a results folder (argent.runs.Results.step_times)
# A measured step of one size: more than a day per step is no measurement (1e300 printed a 300-digit
# CPU-hour estimate), nor a batch of more than 2^31 samples.
MAX_STEP_SECONDS = 86_400.0
MAX_BATCH = 2**31


@dataclass(frozen=True)
class SizeRecord:
    """One size of the measured record (``record_from_runs`` writes it)."""

    step_seconds: float
    batch_size: int
    device: str
    jobs: int = 0
    includes: str = ""

    def __post_init__(self) -> None:
        check_range("step_seconds", self.step_seconds, low=0.0, low_open=True, high=MAX_STEP_SECONDS)
        check_range("batch_size", self.batch_size, low=1, high=MAX_BATCH)
        check_range("jobs", self.jobs, low=0, high=2**53)


@dataclass(frozen=True)
class StepRecord:
    """The measured record ``bench/step_times.json``: the machine, the results it came from, per size."""

    sizes: dict[str, SizeRecord] = field(default_factory=dict)
    machine: str = "?"
    source: str = ""


def read_record(path: Path) -> StepRecord:
    """The record at ``path`` (``cost.step_times``); an empty one when there is no file. A malformed
    file is a ``ConfigError`` naming ``cost.step_times``, the path and the fix."""
    if not path.is_file():
        return StepRecord()
    fix = "rewrite it with argent plan --record-from RESULTS, or delete it (its sizes are then unknown)"
    try:  # a regular file of UTF-8 JSON nested at most 64 levels (argent.runs.documents)
        data = read_document(path, fix)
    except ReadError as err:
        raise ConfigError(f"cost.step_times: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"cost.step_times: {path}: expected a mapping {{machine, source, sizes: {{<size>: "
                          f"{{step_seconds, batch_size, device}}}}}}, got {type(data).__name__}; {fix}")
    try:
        return from_dict(StepRecord, data)
    except ConfigError as err:
        raise ConfigError(f"cost.step_times: {path}: {err}; {fix}") from None


def nearby_record(results: Path, base_dir: Path, own: Path, size: str, device: str) -> str:
    """A record of another results folder beside ``results`` (another config's, e.g. results/quick for
    results/) that measured ``size`` on this device kind, named with the ``--set`` that reads it. Offered,
    not used: that config's model or data at this size may differ, and a step time is never guessed."""
    found = [results.parent / RECORD, *sorted(results.parent.glob(f"*/{RECORD}")), *sorted(results.glob(f"*/{RECORD}"))]
    for path in dict.fromkeys(p for p in found if p.resolve() != own.resolve()):
        try:
            data = read_document(path)  # a FIFO or a deep nest refused, not waited on
            record = from_dict(StepRecord, data) if isinstance(data, dict) else StepRecord()
        except (OSError, ValueError):  # unreadable or malformed (ConfigError is a ValueError): not offered
            continue
        entry = record.sizes.get(size)
        if entry and entry.device.split(":")[0] == device.split(":")[0]:
            shown = path.relative_to(base_dir) if path.is_relative_to(base_dir) else path
            return f"; {shown} has {size} on {entry.device} ({record.machine}): --set cost.step_times={shown}"
    return ""


# ---- writing the record from finished jobs -------------------------------------------------------


@dataclass(frozen=True)
class _RecordedTrain:
    steps: int
    batch_size: int
    device: str


def _recorded_train(train: dict[str, Any], where: Path) -> _RecordedTrain:
    """A run's ``train.steps``, ``batch_size`` and ``device`` from its stored config, each checked."""
    missing = [k for k in ("steps", "batch_size", "device") if k not in train]
    if missing:
        raise ConfigError(f"--record-from: {where}: train.{missing[0]} missing (expected the run's resolved config, "
                          f"with train.steps, train.batch_size and train.device); re-run its training job")
    try:
        out = from_dict(_RecordedTrain, {k: train[k] for k in ("steps", "batch_size", "device")}, "train")
        check_range("train.steps", out.steps, low=1)
        check_range("train.batch_size", out.batch_size, low=1)
    except ConfigError as err:
        raise ConfigError(f"--record-from: {where}: {err}") from None
    return out


def record_from_runs(results: Path, out: Path) -> dict[str, Any]:
    """``measure_runs(results)``, written to ``out`` (``argent plan --record-from``)."""
    record = measure_runs(results)
    atomic_write_json(out, record)
    return record


def live_record(results: Path) -> StepRecord:
    """The step times of ``results``' own finished training jobs, measured as ``--record-from`` measures
    them, read at each plan; an empty record when none has finished (or a job record is malformed: the cost
    table names it; an estimate is not worth stopping the DAG for)."""
    if not Results(results).job_records.is_dir():
        return StepRecord()
    try:
        return from_dict(StepRecord, {**measure_runs(results), "machine": "this results folder's finished jobs"})
    except ConfigError:
        return StepRecord()


def measure_runs(results: Path) -> dict[str, Any]:
    """Step seconds per size from finished training jobs of a results folder: each job's record
    (``argent.runs.job_records``: the job's wall seconds, start-up included) over the run's steps, median per
    size, with the machine and device it was measured on."""
    per_size: dict[str, list[tuple[float, int, str]]] = {}
    records = Results(results).job_records
    for path in job_record_files(records, "train"):
        run, group = parse_run_job(path.stem), path.parent.name
        if run is None:
            continue  # not a run's job
        folder = RunFolder(run_dir(results, group, run.variant, run.size, run.seed))
        if not folder.config.is_file() or not folder.summary.is_file():
            continue
        resolved = folder.stored_config()
        if not isinstance(resolved.get("train"), dict) or "size" not in resolved:
            continue  # an unreadable config.yaml: the run's own readers name it
        try:
            job = read_job_record(path, records)
        except JobRecordError as err:
            raise ConfigError(f"--record-from: {err}") from None
        train = _recorded_train(resolved["train"], folder.config)
        wall = statistics.fmean(row.wall_s for row in job)  # a job measured more than once: its mean
        per_size.setdefault(str(resolved["size"]), []).append((wall / train.steps, train.batch_size, train.device))
    if not per_size:
        raise ConfigError(f"--record-from {results}: no finished training job with a job record "
                          f"(benchmarks/train/<group>/*.tsv beside runs/<group>/...); run the workflow first")
    sizes = {}
    for size, rows in per_size.items():
        batch, device = rows[0][1], rows[0][2]
        same = [s for s, b, d in rows if b == batch and d == device]
        sizes[size] = {"step_seconds": statistics.median(same), "batch_size": batch, "device": device,
                       "jobs": len(same), "includes": "job start-up and periodic checkpoints"}
    return {"machine": f"{platform.node()} ({platform.processor() or platform.machine()})", "source": str(results),
            "sizes": sizes}
