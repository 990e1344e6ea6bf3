"""Every job's cost: Snakemake's job records (its ``benchmark:`` TSVs) aggregated into ``cost.{md,csv}``.

Each workflow rule writes a job record ``<results>/benchmarks/<stage>/[<group>/]<job>.tsv``, read by
``argent.runs.job_records`` (which also owns the job names: a run's job ``<variant>-<size>-seed<k>`` gives
the variant). The tables:

- per stage: jobs, total and mean wall seconds, share of the summed wall time, peak ``max_rss``,
  total CPU seconds;
- per stage and variant: the same, for the stages whose jobs name a variant.

Summed wall time is the sum over jobs (what the run would take on one core), not the elapsed time
of a parallel run. ``python -m argent.tables.cost --job-records results/benchmarks --out results/tables``.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from pathlib import Path

from argent.io import atomic_write_text
from argent.runs import JobRecord, read_job_records

COLUMNS = ("stage", "variant", "jobs", "total_wall_s", "mean_wall_s", "share_of_wall", "peak_max_rss_mb", "cpu_s")


def run_cpu_seconds(jobs: list[JobRecord], stage: str = "train") -> dict[tuple[str, str, str], float]:
    """Mean CPU seconds of one run of ``stage`` per (group, variant, size), from the job records
    (``argent.runs.read_job_records``; a job whose CPU time was not measured is left out)."""
    cpu: dict[tuple[str, str, str], list[float]] = {}
    for j in jobs:
        if j.stage == stage and j.variant and not math.isnan(j.cpu_s):
            cpu.setdefault((j.group, j.variant, j.size), []).append(j.cpu_s)
    return {key: sum(v) / len(v) for key, v in cpu.items()}


def _row(stage: str, variant: str, jobs: list[JobRecord], grand_total: float) -> dict[str, object]:
    walls = [j.wall_s for j in jobs]
    rss = [j.max_rss_mb for j in jobs if not math.isnan(j.max_rss_mb)]
    cpu = [j.cpu_s for j in jobs if not math.isnan(j.cpu_s)]
    total = sum(walls)
    return {
        "stage": stage, "variant": variant, "jobs": len({(j.stage, j.job) for j in jobs}),
        "total_wall_s": round(total, 2), "mean_wall_s": round(total / len(walls), 2),
        "share_of_wall": round(total / grand_total, 4) if grand_total > 0 else math.nan,
        "peak_max_rss_mb": round(max(rss), 1) if rss else math.nan,
        "cpu_s": round(sum(cpu), 2) if cpu else math.nan,
    }


def cost_rows(jobs: list[JobRecord]) -> tuple[list[dict], list[dict]]:
    """(per stage rows + an "all" row, per stage-and-variant rows)."""
    grand = sum(j.wall_s for j in jobs)
    stages = sorted({j.stage for j in jobs})
    per_stage = [_row(s, "", [j for j in jobs if j.stage == s], grand) for s in stages]
    if jobs:
        per_stage.append(_row("all", "", jobs, grand))
    keys = sorted({(j.stage, j.variant) for j in jobs if j.variant})
    per_variant = [_row(s, v, [j for j in jobs if j.stage == s and j.variant == v], grand) for s, v in keys]
    return per_stage, per_variant


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:g}"
    return str(value)


def markdown(rows: list[dict], title: str) -> str:
    lines = [f"## {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_cost_tables(job_records: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``cost.md`` and ``cost.csv`` (both tables, the CSV with a ``table`` column) atomically, from
    the job records under ``job_records`` (``<results>/benchmarks``)."""
    per_stage, per_variant = cost_rows(read_job_records(job_records))
    out_dir = Path(out_dir)
    note = ("Wall seconds summed over jobs (one core's worth, not the elapsed time of a parallel run); "
            "max_rss in MB as Snakemake's `benchmark:` measured it; share = share of the summed wall time; "
            "cpu_s is a lower bound: Snakemake samples a job's CPU time once a second for its first 30 s, then "
            "every 30 s, so up to 30 s of each job's end is not counted.\n")
    md = "# Cost of the run\n\n" + note + "\n" + markdown(per_stage, "Per stage") + "\n" + \
        markdown(per_variant, "Per stage and variant")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=("table", *COLUMNS), lineterminator="\n")
    writer.writeheader()
    for table, rows in (("stage", per_stage), ("variant", per_variant)):
        for r in rows:
            writer.writerow({"table": table, **{k: _fmt(v) if isinstance(v, float) else v for k, v in r.items()}})
    md_path, csv_path = out_dir / "cost.md", out_dir / "cost.csv"
    atomic_write_text(md_path, md)
    atomic_write_text(csv_path, buf.getvalue())
    return md_path, csv_path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m argent.tables.cost", description=__doc__.splitlines()[0])
    p.add_argument("--job-records", type=Path, required=True,
                   help="folder of Snakemake's job records, <stage>/[<group>/]<job>.tsv (<results>/benchmarks)")
    p.add_argument("--out", type=Path, required=True, help="folder for cost.md and cost.csv")
    args = p.parse_args(argv)
    if not args.job_records.is_dir():
        print(f"argent cost: {args.job_records}: no such folder (run the workflow first)", file=sys.stderr)
        return 1
    try:
        md_path, _ = write_cost_tables(args.job_records, args.out)
    except ValueError as err:
        print(f"argent cost: {err}", file=sys.stderr)
        return 1
    print(md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
