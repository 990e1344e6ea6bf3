"""The paper's tables: main results (ARGENT Table 2 layout) and ablations (Table 3 layout).

Layout comes from the workflow config's ``tables`` section:

    tables:
      main:                       # rows = variants × sizes
        variants: [clip, meru, hycoclip, argent]
        columns: [{label: Cls, benchmark: hs_zeroshot, metric: top1, scale: 100}, ...]
      ablations:                  # groups of rows
        columns: [...]
        groups: [{name: "(a) loss", rows: [{label: "MERU Ent", variant: meru}, ...]}, ...]

A cell is mean ± 95 % CI half-width over seeds with n (docs/statistics.md). A metric that a
benchmark reports as null (PEP for CLIP) shows "n/a"; a row whose variant has no evaluation shows
"not run", a column whose benchmark did not run for it "not evaluated"; "†" marks a cell computed
from fewer seeds than the config trains, or from an evaluation marked partial (an unfinished run). Published numbers are printed beside ours, in their own
labelled tables, never mixed into our cells: they come from other data and budgets.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from argent.tables.stats import Summary, fmt_summary, mean_ci
from argent.tablespec.section import Column, Row, RowGroup

PUBLISHED = Path(__file__).resolve().parents[1] / "resources" / "published.yaml"
PARTIAL_MARK = "†"

CELL_LEGEND = ("Cells: mean ± 95 % CI half-width over training seeds (Student t, n − 1 degrees of freedom), "
               "n = seeds; n=1: the single value, no interval. "
               f"{PARTIAL_MARK} = partial input: fewer seeds than the config trains for that variant, or an "
               "evaluation marked partial (an unfinished run, skipped items). "
               "n/a = not defined for that model (e.g. PEP for CLIP); not run = the variant has no evaluation "
               "in this run; not evaluated = the benchmark did not run for it (e.g. real data absent).")


@dataclass(frozen=True)
class Cell:
    summary: Summary
    status: str            # ok | n/a | not run | not evaluated
    n_configured: int
    flagged: bool = False  # an evaluation JSON of the cell says partial (e.g. an unfinished run)

    @property
    def partial(self) -> bool:
        return self.status == "ok" and (self.summary.n < self.n_configured or self.flagged)


def seed_index(long: pl.DataFrame) -> dict[tuple[str, str, str, str], dict[int, float | None]]:
    """(variant, size, benchmark, metric) -> {seed: value}."""
    index: dict[tuple[str, str, str, str], dict[int, float | None]] = defaultdict(dict)
    for r in long.iter_rows(named=True):
        index[(r["variant"], r["size"], r["benchmark"], r["metric"])][r["seed"]] = r["value"]
    return dict(index)


def make_cell(index: dict, present: set[tuple[str, str]], variant: str, size: str, benchmark: str, metric: str,
              n_configured: int, flagged: bool = False) -> Cell:
    if (variant, size) not in present:
        return Cell(Summary(None, None, 0), "not run", n_configured)
    by_seed = index.get((variant, size, benchmark, metric))
    if by_seed is None:
        return Cell(Summary(None, None, 0), "not evaluated", n_configured)
    summary = mean_ci(by_seed.values())
    return Cell(summary, "ok" if summary.n else "n/a", n_configured, flagged)


def cell_text(cell: Cell, scale: float) -> str:
    if cell.status != "ok":
        return cell.status
    text = fmt_summary(cell.summary, scale)
    return f"{text} {PARTIAL_MARK}" if cell.partial else text


@dataclass
class TableInput:
    """What every paper table needs: the seed index, which runs exist, the configured seeds."""

    index: dict
    present: set[tuple[str, str]]          # (variant, size) with any evaluation JSON
    sizes: list[str]
    seeds: dict[str, list[int]]            # variant -> configured seeds
    flagged: set[tuple[str, str, str]] = field(default_factory=set)  # (variant, size, benchmark) of a partial JSON

    @classmethod
    def build(cls, long: pl.DataFrame, sizes: list[str], seeds: dict[str, list[int]]) -> "TableInput":
        present = set(zip(long["variant"].to_list(), long["size"].to_list()))
        bad = long.filter(pl.col("partial")) if "partial" in long.columns else long.clear()
        flagged = set(zip(bad["variant"].to_list(), bad["size"].to_list(), bad["benchmark"].to_list()))
        return cls(seed_index(long), present, sizes, seeds, flagged)


def layout(data: TableInput, rows: list[Row], columns: list[Column],
           group: str = "") -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """rows (label, variant) × sizes × columns (label, benchmark, metric, scale) of the ``tables:`` section ->
    (markdown lines as dicts, CSV records with the numbers)."""
    lines, records = [], []
    for size in data.sizes:
        for row in rows:
            variant = row.variant
            n_conf = len(data.seeds.get(variant, []))
            line = {"row": row.label, "size": size}
            for col in columns:
                scale = float(col.scale)
                cell = make_cell(data.index, data.present, variant, size, col.benchmark, col.metric, n_conf,
                                 (variant, size, col.benchmark) in data.flagged)
                line[col.label] = cell_text(cell, scale)
                s = cell.summary
                records.append({
                    "group": group, "row": row.label, "variant": variant, "size": size, "column": col.label,
                    "benchmark": col.benchmark, "metric": col.metric,
                    "mean": None if s.mean is None else s.mean * scale,
                    "ci95": None if s.half_width is None else s.half_width * scale,
                    "std": None if s.std is None else s.std * scale,
                    "n": s.n, "n_configured": n_conf, "partial": cell.partial, "status": cell.status,
                    "source": "argent"})
            lines.append(line)
    return lines, records


def markdown(lines: list[dict[str, str]]) -> str:
    if not lines:
        return "(no rows)"
    cols = list(lines[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(line.get(c, "")) for c in cols) + " |" for line in lines]
    return "\n".join(out)


def published_markdown(key: str) -> str:
    pub = yaml.safe_load(PUBLISHED.read_text())[key]
    cols = pub["columns"]
    lines = [f"**Published, for orientation only** — {pub['source']} (different data and budget; not comparable "
             "digit for digit).", "", "| model | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for name, values in pub["rows"].items():
        lines.append(f"| {name} | " + " | ".join("–" if v is None else f"{v}" for v in values) + " |")
    return "\n".join(lines)


def seeds_note(data: TableInput, variants: list[str]) -> str:
    parts = [f"{v}: {len(data.seeds.get(v, []))}" for v in dict.fromkeys(variants)]
    return "Seeds the config trains per variant: " + ", ".join(parts) + "."


def main_table(data: TableInput, rows: list[Row], columns: list[Column],
               left_out: list[str] = ()) -> tuple[str, list[dict[str, Any]]]:
    """``rows``: (label, variant as ``<group>/<variant>``); ``left_out``: the rows whose group is off, named."""
    lines, records = layout(data, rows, columns)
    md = ["# Main results (ARGENT Table 2 layout)", "", CELL_LEGEND, "", seeds_note(data, [r.variant for r in rows]), ""]
    if left_out:
        md += [f"Left out (their group is off in this config): {', '.join(left_out)}.", ""]
    md += [markdown(lines), "", published_markdown("table2"), ""]
    return "\n".join(md), records


def ablation_table(data: TableInput, groups: list[RowGroup], columns: list[Column]) -> tuple[str, list[dict[str, Any]]]:
    named = [r.variant for g in groups for r in g.rows]
    md = ["# Ablations (ARGENT Table 3 layout)", "", CELL_LEGEND, "", seeds_note(data, named), ""]
    records: list[dict[str, Any]] = []
    for group in groups:
        lines, recs = layout(data, group.rows, columns, group.name)
        md += [f"## {group.name}", "", markdown(lines), ""]
        records += recs
    md += [published_markdown("table3"), ""]
    return "\n".join(md), records


def hardware_footnote(classes: dict[str, list[str]]) -> str:
    """One line when a table's runs trained on more than one hardware class ({class: runs}): its
    numbers then agree with a re-run within seed noise, not bit for bit (argent/engine/provenance.py)."""
    if len(classes) < 2:
        return ""
    parts = "; ".join(f"{name} ({len(runs)} run{'s' if len(runs) != 1 else ''})" for name, runs in sorted(classes.items()))
    return (f"**Mixed hardware:** the runs above trained on {len(classes)} hardware classes (CPU capability, GPU, "
            f"torch): {parts}. Numbers reproduce bit for bit only within one class.\n")
