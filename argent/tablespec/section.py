"""The ``tables:`` section of the workflow config, typed: the main table's rows and columns, the
ablation table's row groups and columns, and the claims table's file and metric roles; and how a row
names its run (``qualified``: ``<group>/<variant>``, a bare variant name in the table's group).

Torch- and polars-free: the DAG build types it (a typo is found before any job runs) and
``argent tables`` reads it. An unknown key names its full path and the allowed keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import ConfigError, check_range, from_dict, section_of

__all__ = ["DEFAULT_GROUP", "AblationsTable", "ClaimsTable", "Column", "MainTable", "MetricRef", "Row", "RowGroup",
           "TablesSection", "claims_table", "qualified", "tables_section"]

DEFAULT_GROUP = "main"  # a bare variant name in a claim's a/b means this group


def qualified(name: str, group: str) -> str:
    """``<group>/<variant>`` as written, or a bare variant name in ``group``."""
    return name if "/" in name else f"{group}/{name}"


def _required(obj: Any, *keys: str) -> None:
    for key in keys:
        if not getattr(obj, key):
            raise ConfigError(f"{key}: required")


@dataclass
class Column:
    """One column: ``metric`` of ``benchmark``'s result JSON, times ``scale``, headed ``label``."""

    label: str = ""
    benchmark: str = ""
    metric: str = ""
    scale: float = 1.0

    def __post_init__(self) -> None:
        _required(self, "label", "benchmark", "metric")
        check_range("scale", self.scale, low=0.0, low_open=True)


@dataclass
class Row:
    """One row: ``variant`` (``<group>/<variant>``, or a variant of the table's group) labelled ``label``."""

    label: str = ""
    variant: str = ""

    def __post_init__(self) -> None:
        _required(self, "label", "variant")


@dataclass
class RowGroup:
    """A block of rows of the ablation table under the heading ``name``."""

    name: str = ""
    rows: list[Row] = field(default_factory=list)

    def __post_init__(self) -> None:
        _required(self, "name", "rows")


@dataclass
class MainTable:
    """``tables.main``: one row per variant (labelled by its name), the columns."""

    variants: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    group: str = "main"  # the group a bare variant name is read from

    def __post_init__(self) -> None:
        _required(self, "variants", "columns")


@dataclass
class AblationsTable:
    """``tables.ablations``: blocks of labelled rows, the columns."""

    columns: list[Column] = field(default_factory=list)
    groups: list[RowGroup] = field(default_factory=list)
    group: str = "ablations"  # the group a bare variant name is read from

    def __post_init__(self) -> None:
        _required(self, "columns", "groups")


@dataclass
class MetricRef:
    """What measures a metric role a claim names: a benchmark's metric (``lower_is_better``: TIE, LCA)."""

    benchmark: str = ""
    metric: str = ""
    scale: float = 1.0
    lower_is_better: bool = False

    def __post_init__(self) -> None:
        _required(self, "benchmark", "metric")
        check_range("scale", self.scale, low=0.0, low_open=True)


@dataclass
class ClaimsTable:
    """``tables.claims``: the claims file (format in its header) and, per metric role, what measures
    it in this config (several: one row each; docs/statistics.md)."""

    file: str = "config/claims.yaml"  # relative: to the working folder
    metrics: dict[str, list[MetricRef]] = field(default_factory=dict)
    # The table is written when a claim's two runs share this many seeds: a paired difference has an
    # interval and a test from 2 on; 1 writes the untested n=1 table (config/smoke.yaml: its code runs in CI).
    min_paired_seeds: int = 2

    def __post_init__(self) -> None:
        check_range("min_paired_seeds", self.min_paired_seeds, low=1)

    def path(self, base_dir: Path) -> Path:
        """``file``, a relative one taken from ``base_dir``."""
        path = Path(self.file)
        return path if path.is_absolute() else Path(base_dir) / path

    def roles(self) -> dict[str, list[dict[str, Any]]]:
        """``metrics`` as mappings (``argent.tablespec.declarations.parse_roles`` reads them)."""
        return {role: [dataclasses.asdict(m) for m in refs] for role, refs in self.metrics.items()}


@dataclass
class TablesSection:
    """``tables:``."""

    main: MainTable = field(default_factory=MainTable)
    ablations: AblationsTable = field(default_factory=AblationsTable)
    claims: ClaimsTable = field(default_factory=ClaimsTable)


def tables_section(raw: dict[str, Any], base_dir: Path | None = None) -> TablesSection:
    """A workflow config mapping's ``tables:`` section, typed; ``main`` and ``ablations`` are required."""
    section = section_of(raw, "tables")
    missing = [key for key in ("main", "ablations") if key not in section]
    if missing:
        raise ConfigError(f"tables.{missing[0]}: required (docs/config.md; config/config.yaml has an example)")
    return from_dict(TablesSection, section, "tables")


def claims_table(raw: dict[str, Any]) -> ClaimsTable:
    """``tables.claims`` alone, typed (absent: its defaults): what the claims table and the DAG's
    check of the claims file read, whatever the rest of ``tables:`` holds."""
    return from_dict(ClaimsTable, section_of(section_of(raw, "tables"), "claims"), "tables.claims")
