"""The tables the tables job can write and the files of each. Which of them a config's job writes is the plan's
answer (argent/plan/table_choice.py): the DAG build (the rule's outputs) and ``argent tables`` (what it writes)
ask that one question, so the two always agree. Torch- and polars-free: the Snakefile imports it while it parses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Every table the job can write, in the order the report lists them (the claims first).
TABLES = ("claims", "main", "ablations", "mechanism", "probe", "cost")


@dataclass(frozen=True)
class TableChoice:
    """``written``: the tables the job writes (``.md``, ``.csv``, ``.html`` each), in ``TABLES`` order;
    ``left_out``: {table: why}, each printed as one line."""

    written: tuple[str, ...]
    left_out: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"argent tables: no {name} table: {why}" for name, why in self.left_out.items()]


def table_paths(folder: Path, name: str) -> dict[str, Path]:
    """{suffix: path} of one table's files: ``md`` (its source), ``csv``, ``html`` (the report's page)."""
    return {suffix: folder / f"{name}.{suffix}" for suffix in ("md", "csv", "html")}


# The Snakemake report's menu: one category per table (one click opens it), in this order.
REPORT_SECTIONS = {
    "claims": "Claims",
    "main": "Main results (Table 2)",
    "ablations": "Ablations (Table 3)",
    "mechanism": "Mechanism (cone collapse)",
    "probe": "Probe (TaxGen)",
    "table1": "Table 1 (HierarCaps cleaning)",
    "cost": "Cost",
    "figures": "Figures",
}


def report_categories(written: tuple[str, ...], cleaned: bool) -> dict[str, str]:
    """{section: its category in the report}: the report sorts categories by name, so each section this config
    makes (``written`` tables, Table 1 when a data set is ``cleaned``, the figures) is numbered in
    ``REPORT_SECTIONS`` order (the claims first, when it tests any); a section it does not make keeps its title."""
    shown = [*written, *(["table1"] if cleaned else []), "figures"]
    shown = [name for name in REPORT_SECTIONS if name in shown]
    return {name: f"{shown.index(name) + 1}. {title}" if name in shown else title
            for name, title in REPORT_SECTIONS.items()}
