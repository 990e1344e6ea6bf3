"""Job records: the file Snakemake's ``benchmark:`` directive leaves for every job, and their one reader.

Names, because "benchmark" is taken: in argent a *benchmark* is an evaluation entry
(``argent/evaluation/benchmarks.py``); the per-job file Snakemake measures is a *job record*; the
measured step times of ``argent plan --record-from`` are the *step-time record*. The folder keeps
Snakemake's word (``<results>/benchmarks/``, ``argent.runs.Results.job_records``) so that existing
results folders keep their records.

Where::

    <results>/benchmarks/<stage>/<job>.tsv            a job of a stage that runs once (tables, preflight, ...)
    <results>/benchmarks/<stage>/<group>/<job>.tsv    a job of one run (train, evaluate, probe)

and a run's job is named ``<variant>-<size>-seed<k>`` (``run_job``; the rules name their records with
``run_job_record``, the readers parse it back with ``parse_run_job``). Format: tab-separated, a header
then one row per repeat; ``s`` the wall seconds, ``max_rss`` the peak resident memory in MB,
``cpu_time`` the CPU seconds; ``NA`` where Snakemake could not measure.

The cost tables (``argent/tables/cost.py``) and the plan's step-time record (``argent/plan/cost.py``)
read them here. Paths only: no torch, the Snakefile imports this while it parses.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from argent.io import ArgentError
from argent.runs.layout import Results, run_name, split_run

_RUN_JOB = re.compile(r"^(?P<run>.+)-seed(?P<seed>\d+)$")
WALL = "s"  # the column of the job's wall seconds, the one a record must have


class JobRecordError(ArgentError, ValueError):
    """A job record that is not one Snakemake writes; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class RunJob:
    """What a run's job name says: ``<variant>-<size>-seed<k>``."""

    variant: str
    size: str
    seed: int


@dataclass(frozen=True)
class JobRecord:
    """One row of a job record (a job measured ``repeat`` times has as many)."""

    stage: str       # the first folder under the records folder (the rule's)
    job: str         # the file's stem
    group: str       # the folder between stage and file (a run's experiment group); "" when none
    variant: str     # from a run's job name; "" when the job does not name one
    size: str        # likewise
    seed: int | None
    wall_s: float    # > 0
    max_rss_mb: float  # NaN when Snakemake could not measure it
    cpu_s: float       # likewise
    path: Path


def run_job(variant: str, size: str, seed: int | str) -> str:
    """A run's job name: ``<variant>-<size>-seed<k>``."""
    return f"{run_name(variant, size)}-seed{seed}"


def parse_run_job(job: str) -> RunJob | None:
    """``run_job``'s name back to its parts; None for a job that names no run (sizes hold no '-')."""
    match = _RUN_JOB.match(job)
    if not match:
        return None
    variant, size = split_run(match["run"])
    return RunJob(variant, size, int(match["seed"])) if variant and size else None


def job_record_path(results: str | Path, stage: str, *parts: str) -> Path:
    """``<results>/benchmarks/<stage>/<parts...>.tsv``: the last part is the job's name."""
    *folders, job = parts
    return Results(Path(results)).job_records.joinpath(stage, *folders, f"{job}.tsv")


def run_job_record(results: str | Path, stage: str, group: str, variant: str, size: str, seed: int | str) -> Path:
    """The record of one run's job of ``stage``, ``<results>/benchmarks/<stage>/<group>/<variant>-<size>-seed<k>.tsv``
    (the rules pass Snakemake's wildcards, ``"{group}"`` & co.)."""
    return job_record_path(results, stage, group, run_job(variant, size, seed))


def job_record_files(records: str | Path, stage: str | None = None) -> list[Path]:
    """Every ``<records>/<stage>/**/*.tsv`` (one stage, or all), sorted; [] when the folder is absent."""
    root = Path(records)
    return sorted(root.glob(f"{stage}/**/*.tsv" if stage else "*/**/*.tsv"))


NOT_MEASURED = ("", "NA", "-")  # what Snakemake writes where it could not measure
LARGEST = 1e15  # above any job's seconds or megabytes: the cost table's sums stay finite


def _number(value: str | None) -> float:
    """A column's text as a number; NaN for Snakemake's "not measured" and for text that is no number."""
    try:
        return float(value) if value is not None and value.strip() not in NOT_MEASURED else math.nan
    except ValueError:
        return math.nan


def _measured(value: str | None, column: str, where: str, fix: str) -> float:
    """A measured column (``max_rss`` MB, ``cpu_time`` s) as a number >= 0, NaN when not measured;
    text, a negative, NaN or infinity is a ``JobRecordError`` naming the file, line and column (it was
    printed in cost.md, or left out of it, without a word)."""
    number = _number(value)
    if value is not None and value.strip() not in NOT_MEASURED and not 0 <= number <= LARGEST:  # NaN fails too
        raise JobRecordError(f"{where}: {column} is {value!r}, expected a number in [0, {LARGEST:g}] (or NA where "
                             f"Snakemake could not measure it); {fix}")
    return number


def read_job_record(path: str | Path, records: str | Path) -> list[JobRecord]:
    """The rows of the job record ``path`` under the records folder ``records`` (which gives its stage
    and group); a ``JobRecordError`` naming the file (and line) when it is not one Snakemake writes."""
    path, records = Path(path), Path(records)
    fix = "delete it and re-run its job"
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise JobRecordError(f"{path}: not a text file; {fix}") from None
    rows = [r for r in csv.reader(io.StringIO(text), delimiter="\t") if r]  # a blank line is no row
    head = rows[0] if rows else []
    if WALL not in head or len(rows) < 2:
        raise JobRecordError(f"{path}: not a Snakemake job record (a tab-separated header with the column "
                             f"{WALL!r}, then one row per repeat); {fix}")
    stage, *folders = path.relative_to(records).parts[:-1] or ("",)
    run = parse_run_job(path.stem)
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(head):
            raise JobRecordError(f"{path}, line {line}: {len(row)} values under a header of {len(head)}; {fix}")
        value = dict(zip(head, row))
        wall = _number(value[WALL])
        # NaN (NA) too: a job without its wall time has no cost. 0 is one: Snakemake writes 2 decimals, and a
        # job of a few milliseconds (staging the shipped 0.4 MB WordNet) reads 0.00.
        if not 0 <= wall <= LARGEST:
            raise JobRecordError(f"{path}: s (the job's wall seconds) is {value[WALL]!r}, expected a number ≥ 0 "
                                 f"on line {line} (at most {LARGEST:g}; Snakemake writes NA when it could not measure "
                                 f"the job); {fix}")
        out.append(JobRecord(stage, path.stem, folders[-1] if folders else "", run.variant if run else "",
                             run.size if run else "", run.seed if run else None, wall,
                             _measured(value.get("max_rss"), "max_rss", f"{path}, line {line}", fix),
                             _measured(value.get("cpu_time"), "cpu_time", f"{path}, line {line}", fix), path))
    return out


def read_job_records(records: str | Path, stage: str | None = None) -> list[JobRecord]:
    """Every row of every job record under ``records`` (``<results>/benchmarks``), of one stage or all."""
    return [r for path in job_record_files(records, stage) for r in read_job_record(path, records)]
