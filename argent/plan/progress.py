"""While the DAG runs: one line per job start and end, with jobs done / total and the time left (issue 53).

Snakemake logs each job's start (event ``job_info``: ``jobid``, ``rule_name``, ``wildcards``, ``threads``),
its end (``job_finished``: ``job_id``; ``job_error``: ``jobid``), the count of jobs done (``progress``:
``done``, ``total``) and the jobs it will run (``run_info``: ``stats``, jobs per rule) as records of its
logger, the events its logger plugins receive (snakemake-interface-logger-plugins' ``LogEvent``).
``ProgressHandler`` is a ``logging.Handler`` that reads those fields; ``workflow/rules/common.smk``
attaches it to Snakemake's logger (a logger plugin package is found by Snakemake only when installed
as a regular package, and the README installs argent with ``pip install -e``). Nothing here imports
Snakemake: events are matched by their names.

The time left: each job not yet finished costs its kind's mean CPU seconds (wall seconds where
unmeasured) in the results folder's job records, the same estimate the start of a run prints
(``argent.tables.summary.eta_line``), updated with the jobs this run finishes; a training with no
record yet costs the plan's step time × its steps (``argent.plan.cost.train_job_seconds``). The sum
over the cores, less what the running jobs have spent already. Kinds never measured are counted, not
guessed.
"""

from __future__ import annotations

import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from argent.runs import JobRecordError, Results, read_job_records

TARGET_RULE = "all"  # the workflow's target: no work, no line


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``1 h 05 min``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def job_label(rule: str, wildcards: dict[str, Any]) -> str:
    """``train main/clip-tiny/seed0`` for a run's job, ``clean_hierarcaps dataset=hiershapes`` otherwise."""
    w = {k: str(v) for k, v in (wildcards or {}).items()}
    if {"group", "variant", "size", "seed"} <= set(w):
        return f"{rule} {w['group']}/{w['variant']}-{w['size']}/seed{w['seed']}"
    rest = " ".join(f"{k}={v}" for k, v in w.items() if k != "parquet") or (Path(w["parquet"]).stem if "parquet" in w else "")
    return f"{rule} {rest}".strip()


class JobCosts:
    """CPU seconds per job kind: (rule, variant) and rule means of the recorded jobs, and this run's own."""

    def __init__(self, records: Path | None, train_seconds: float | None = None):
        self.seconds: dict[tuple[str, str], list[float]] = {}
        self.train_seconds = train_seconds
        try:
            rows = read_job_records(records) if records is not None and records.is_dir() else []
        except JobRecordError:
            rows = []  # a damaged record is the cost table's to name; an estimate is not worth a failure
        for r in rows:
            self.add(r.stage, r.variant, r.wall_s if math.isnan(r.cpu_s) else r.cpu_s)

    def add(self, rule: str, variant: str, cpu_seconds: float) -> None:
        self.seconds.setdefault((rule, ""), []).append(cpu_seconds)
        if variant:
            self.seconds.setdefault((rule, variant), []).append(cpu_seconds)

    def of(self, rule: str, variant: str = "") -> float | None:
        known = self.seconds.get((rule, variant)) or self.seconds.get((rule, ""))
        if known:
            return statistics.fmean(known)
        return self.train_seconds if rule == "train" else None


class Progress:
    """The state of one Snakemake run, fed its log events (``event(name, fields)``); returns the lines to print."""

    def __init__(self, costs: JobCosts, cores: int | None, clock: Any = time.monotonic):
        self.costs, self.cores, self.clock = costs, cores, clock
        self.planned: dict[str, int] = {}     # rule -> jobs this run executes
        self.finished: dict[str, int] = {}    # rule -> jobs of it finished in this run
        self.running: dict[Any, tuple[str, str, str, int, float]] = {}  # jobid -> rule, variant, label, threads, t0
        self.ended: list[tuple[str, str]] = []  # (verb, label + duration) waiting for the next count
        self.done, self.total = 0, 0

    def event(self, name: str, fields: dict[str, Any]) -> list[str]:
        if name == "run_info":
            stats = dict(fields.get("stats") or {})
            self.total = int(stats.pop("total", sum(stats.values())))
            self.planned = {str(rule): int(n) for rule, n in stats.items()}
        elif name == "resources_info" and fields.get("cores"):
            self.cores = self.cores or int(fields["cores"])
        elif name == "job_info":
            return self._started(fields)
        elif name in ("job_finished", "job_error"):
            self._ended(fields.get("job_id", fields.get("jobid")), failed=name == "job_error")
        elif name == "progress":
            self.done, self.total = int(fields.get("done", self.done)), int(fields.get("total", self.total))
            lines = [self._line(f"{verb:<6} {text}") for verb, text in self.ended]
            self.ended = []
            return lines
        return []

    def _started(self, fields: dict[str, Any]) -> list[str]:
        rule = str(fields.get("rule_name", "?"))
        if rule == TARGET_RULE:
            return []
        wildcards = fields.get("wildcards") or {}
        variant = str(wildcards.get("variant", "") or "")
        label = job_label(rule, wildcards)
        self.running[fields.get("jobid")] = (rule, variant, label, int(fields.get("threads") or 1), self.clock())
        return [self._line(f"start  {label}")]

    def _ended(self, jobid: Any, failed: bool) -> None:
        if jobid not in self.running:
            return
        rule, variant, label, threads, t0 = self.running.pop(jobid)
        wall = self.clock() - t0
        if failed:
            self.ended.append(("failed", f"{label} after {duration(wall)}"))
            return
        self.finished[rule] = self.finished.get(rule, 0) + 1
        self.costs.add(rule, variant, wall * threads)
        self.ended.append(("done", f"{label} in {duration(wall)}"))

    def left(self) -> tuple[float, int]:
        """(CPU seconds of the jobs not finished, how many of them have no estimate)."""
        seconds, unknown = 0.0, 0
        running = {}
        for rule, variant, _, threads, t0 in self.running.values():
            running[rule] = running.get(rule, 0) + 1
            cost = self.costs.of(rule, variant)
            if cost is None:
                unknown += 1
            else:
                seconds += max(cost - (self.clock() - t0) * threads, 0.0)
        for rule, n in self.planned.items():
            waiting = max(n - self.finished.get(rule, 0) - running.get(rule, 0), 0)
            if rule == TARGET_RULE or not waiting:
                continue
            cost = self.costs.of(rule)
            if cost is None:
                unknown += waiting
            else:
                seconds += waiting * cost
        return seconds, unknown

    def _line(self, text: str) -> str:
        width = len(str(self.total or 0))
        head = f"argent: [{self.done:>{width}}/{self.total}] {text}"
        if not self.cores:
            return head
        seconds, unknown = self.left()
        if unknown and not seconds:
            return f"{head} · time left unknown until a job of each kind has run here"
        tail = f" (+{unknown} job(s) of a kind not yet timed)" if unknown else ""
        return f"{head} · about {duration(seconds / self.cores)} left{tail}"


class ProgressHandler(logging.Handler):
    """Prints ``Progress``'s lines for the records of Snakemake's logger; never lets an error reach it."""

    def __init__(self, results: Path, cores: int | None, train_seconds: float | None = None,
                 stream: TextIO | None = None):
        super().__init__(logging.INFO)
        self.progress = Progress(JobCosts(Results(Path(results)).job_records, train_seconds), cores)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        name = str(getattr(record, "event", "") or "")
        if not name:
            return
        try:
            lines = self.progress.event(name, record.__dict__)
        except Exception:  # a progress line is never worth a failed run
            return
        stream = self.stream or sys.stderr
        for line in lines:
            stream.write(line + "\n")
        if lines:
            stream.flush()
