"""What a finished workflow run printed last: the tables it wrote, the claims it decided, the command
that opens this run's MLflow store and the one that builds its report; and, at its start, an estimate
of the time left from the job records of earlier runs.

The workflow's ``onstart:``/``onsuccess:`` handlers (workflow/rules/summary.smk) call ``eta_line`` and
``print_summary``; nothing here imports Snakemake (the handlers pass plain values).
"""

from __future__ import annotations

import csv
import math
import shlex
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from argent.runs import JobRecordError, Results, read_job_records, results_tracking_uri
from argent.tablespec.outputs import TABLES

PRIMARY = "primary"                                       # the claims table's confirmatory family
DECIDED = ("reproduced", "contradicted", "equivalent")    # a primary row's verdicts that decide it


@dataclass(frozen=True)
class ClaimsCount:
    """The primary rows of ``claims.csv``: how many, and their verdicts."""

    rows: int
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return sum(self.verdicts.get(v, 0) for v in DECIDED)

    def line(self) -> str:
        named = ", ".join(f"{n} {v}" for v, n in sorted(self.verdicts.items(), key=lambda kv: -kv[1]))
        return f"{self.decided} of {self.rows} primary rows decided ({named or 'none tested'})"


class DamagedTable(ValueError):
    """A table the summary reads back is not the CSV the tables job writes (torn, not text, not a file)."""


def count_claims(claims_csv: Path) -> ClaimsCount | None:
    """The primary rows of the claims table and their verdicts; None when the table was not written. A
    table that cannot be read as the tables job's CSV is a ``DamagedTable`` naming it (the end-of-run
    summary says so in one line: it never turns a run whose jobs succeeded into a failed one)."""
    if not claims_csv.exists():
        return None
    if not claims_csv.is_file():
        raise DamagedTable(f"{claims_csv}: not a file (a folder or a FIFO)")
    try:
        with claims_csv.open(newline="", encoding="utf-8") as handle:
            rows = [r for r in csv.DictReader(handle) if r.get("family") == PRIMARY]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DamagedTable(f"{claims_csv}: unreadable ({type(err).__name__}: {str(err)[:120]})") from None
    return ClaimsCount(len(rows), dict(Counter(str(r.get("verdict") or "no verdict") for r in rows)))


def written_tables(tables_dir: Path) -> list[Path]:
    """The page of each table the run wrote (``.html``, else ``.md``), claims first (``TABLES`` order)."""
    found = {p.stem: p for p in sorted(tables_dir.glob("*.md"))}
    found.update({p.stem: p for p in sorted(tables_dir.glob("*.html"))})
    order = {name: i for i, name in enumerate(TABLES)}
    return [found[name] for name in sorted(found, key=lambda n: (order.get(n, len(order)), n))]


def mlflow_command(results: Path, tracking_uri: str | None) -> str:
    """The ``mlflow ui`` command for this run's store (the config's ``tracking.uri``, else the SQLite
    file in the results folder), with an absolute path: it works from any folder. None: tracking is off."""
    if tracking_uri is None:
        return "off (tracking.enabled: false): no store to open"
    uri = tracking_uri or results_tracking_uri(results)
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):  # a relative file: made absolute
        uri = f"sqlite:///{Path(uri.removeprefix('sqlite:///')).resolve()}"
    if uri.startswith(("http://", "https://")):
        return f"open {uri} (this run's MLflow tracking server)"
    return f"mlflow ui --backend-store-uri {shlex.quote(uri)} --host 127.0.0.1"


# MLflow 3.17 opens every experiment on its GenAI view (traces) unless the page is told the workflow is
# model training; the experiment's `mlflow.experimentKind` tag (argent sets it) is what earlier 3.x read.
RUNS_PAGE = "http://127.0.0.1:5000/#/experiments/{id}/runs?workflowType=machine_learning"


def runs_page(results: Path) -> str | None:
    """The address of this run's training runs in ``mlflow ui`` (its default port), from the experiment
    id a run folder recorded (``mlflow_run.json``); None when no run recorded one."""
    from argent.runs.documents import read_document  # a FIFO or a deep nest is refused, not waited on

    for record in sorted(Results(results).root.glob("runs/*/*/seed*/mlflow_run.json")):
        try:
            experiment = read_document(record).get("experiment_id")
        except (OSError, ValueError, AttributeError):  # ReadError is a ValueError
            continue
        if isinstance(experiment, str) and experiment.isdigit():
            return RUNS_PAGE.format(id=experiment)
    return None


def report_command(configfiles: list[str], config_args: list[str], cwd: Path | None = None) -> str:
    """The ``snakemake --report`` command that rebuilds this run's DAG: the same config files (relative
    to ``cwd``, the workflow's folder, where they lie in it) and ``--config`` values."""
    cwd = (cwd or Path.cwd()).resolve()
    parts = ["snakemake", "--cores", "all", "--report", "report.html"]
    paths = [p.relative_to(cwd) if p.is_absolute() and p.is_relative_to(cwd) else p for p in map(Path, configfiles)]
    if paths:  # one flag, every file: a second --configfile would replace the first's list
        parts += ["--configfile", *map(str, paths)]
    if config_args:
        parts += ["--config", *config_args]
    return shlex.join(parts)


@dataclass(frozen=True)
class RunInfo:
    """What the summary needs of the run: its results folder, its MLflow store (``tracking.uri``: "" the
    results folder's, None tracking off), how Snakemake was called, and the tables left out (and why)."""

    results: Path
    tracking_uri: str | None = ""
    configfiles: list[str] = field(default_factory=list)
    config_args: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


def summary_lines(run: RunInfo) -> list[str]:
    """The end-of-run summary, one line each (``print_summary`` renders them)."""
    folder = Results(run.results).tables
    tables = written_tables(folder)
    lines = [f"tables: {len(tables)} written" + ("" if tables else f" (none under {folder})")]
    lines += [f"  {path}" for path in tables]
    try:
        claims = count_claims(folder / "claims.csv")
        why = run.left_out.get("claims", "see the tables job's log")
        lines.append(f"claims: {claims.line()}" if claims else f"claims: no claims table: {why}")
    except DamagedTable as err:
        lines.append(f"claims: the claims table is damaged, {err}; re-run the tables job (delete the file, then "
                     f"snakemake again). The jobs' own statuses decide this run's exit status")
    lines.append(f"MLflow: {mlflow_command(run.results, run.tracking_uri)}")
    page = runs_page(run.results) if run.tracking_uri == "" else None
    if page:
        lines.append(f"  then open {page}")
    lines.append(f"report: {report_command(run.configfiles, run.config_args)}")
    return lines


def print_summary(run: RunInfo) -> None:
    """Print the summary under a rich heading, each line whole: a command is copied as printed, so it is
    never wrapped or cut at the terminal's width (plain text when the output is no terminal)."""
    from rich.console import Console  # only the handler needs it
    from rich.markup import escape

    console = Console(stderr=True)
    console.rule("[bold]argent: what this run wrote", align="left")
    try:
        lines = summary_lines(run)
    except Exception as err:  # noqa: BLE001 - a report after the jobs: it must never fail a run that succeeded
        lines = [f"summary: not written ({type(err).__name__}: {str(err)[:200]}); the tables are under "
                 f"{Results(run.results).tables}"]
    for line in lines:
        label, sep, rest = line.partition(": ")
        if sep and not line.startswith(" "):  # "tables: ...", "MLflow: ...": the label in bold
            console.print(f"[bold]{escape(label)}:[/bold] ", end="")
            line = rest
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def eta_line(records: Path, jobs: list[tuple[str, str]], cores: int) -> str:
    """An estimate of the work left: each planned job (rule, variant: "" for a job of no run) costs the
    mean CPU seconds (wall seconds where unmeasured) of the recorded jobs of its rule and variant (else
    of its rule) in this results folder; the sum over ``cores``. "" when no planned job has a record."""
    try:
        rows = read_job_records(records)
    except JobRecordError:
        return ""  # a damaged record is the cost table's to name; an estimate is not worth a failure
    seconds: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        cost = r.wall_s if math.isnan(r.cpu_s) else r.cpu_s  # the cores a job keeps busy, not its waits
        seconds.setdefault((r.stage, ""), []).append(cost)
        if r.variant:
            seconds.setdefault((r.stage, r.variant), []).append(cost)
    known = [statistics.fmean(seconds.get((rule, variant)) or seconds[(rule, "")])
             for rule, variant in jobs if (rule, variant) in seconds or (rule, "") in seconds]
    if not known:
        return ""
    left = len(jobs) - len(known)
    unknown = f"; {left} job(s) of a kind never recorded here not counted" if left else ""
    return (f"argent: about {sum(known) / max(cores, 1) / 60:,.0f} min of work left for {len(known)} of {len(jobs)} "
            f"jobs (their kind's mean CPU seconds in {records} ÷ {cores} cores){unknown}")
