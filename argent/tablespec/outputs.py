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
