"""Caption sources for ``argent mine`` and atomic writers for its outputs.

Sources yield ``(key, caption)``:
- ``grounded``: webdataset shards (a glob/brace pattern of .tar), through
  ``argent.data.formats.grounded.iter_captions`` (no image decoding);
- ``hierarcaps``: ``hierarcaps_test.csv`` (``id, captions, image_url``), key = ``id``, caption = the
  most specific level (the original COCO caption), read by ``argent.data.formats.hierarcaps`` (its bad
  rows skipped and counted, or, under a strict ``BadDataPolicy``, an error naming the file and row);
- ``table``: a CSV or parquet file with ``key`` and ``caption`` columns.
``auto`` picks by name: .tar or a pattern -> grounded; .parquet -> table; .csv -> hierarcaps when it
has a ``captions`` column, table when it has ``key`` and ``caption``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from argent.data.formats.grounded import iter_captions
from argent.data.formats.hierarcaps import read_hierarcaps
from argent.data.policy import BadDataPolicy
from argent.io import atomic_output
from argent.negatives.config import FORMATS


def detect_format(source: str) -> str:
    """The source format ``auto`` resolves to (see module docstring)."""
    name = source.lower()
    if name.endswith(".tar") or any(ch in source for ch in "*?{["):
        return "grounded"
    if name.endswith(".parquet"):
        return "table"
    if name.endswith(".csv"):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"{source}: caption file not found")
        columns = pl.read_csv(path, n_rows=0).columns
        if "captions" in columns:
            return "hierarcaps"
        if {"key", "caption"} <= set(columns):
            return "table"
        raise ValueError(f"{source}: cannot tell the format from columns {columns}; expected `captions` "
                         "(HierarCaps) or `key, caption`; pass --format")
    raise ValueError(f"{source}: cannot tell the format from the name; pass --format (one of {FORMATS[1:]})")


def _read_table(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: caption file not found")
    if path.suffix.lower() == ".parquet":
        return pl.read_parquet(path)
    return pl.read_csv(path, infer_schema_length=0)  # all columns as text: keys like "007" stay intact


def iter_hierarcaps(path: str | Path, policy: BadDataPolicy | None = None) -> Iterator[tuple[str, str]]:
    """(id, level-4 caption) per usable row of a HierarCaps CSV, through the one HierarCaps reader: a
    bad row (no id, not four levels, ...) goes through ``policy`` (default: skipped and counted)."""
    for sample in read_hierarcaps(path, image_dir=None, policy=policy):
        yield sample.id, sample.levels[-1]


def iter_table(path: str | Path) -> Iterator[tuple[str, str]]:
    """(key, caption) per row of a CSV/parquet with ``key`` and ``caption`` columns."""
    path = Path(path)
    table = _read_table(path)
    missing = {"key", "caption"} - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}; expected `key` and `caption`")
    for row, (key, caption) in enumerate(zip(table["key"].to_list(), table["caption"].to_list())):
        if key is None:
            raise ValueError(f"{path}: data row {row + 1} has no key")
        yield str(key), caption or ""


def iter_grounded(pattern: str, policy: BadDataPolicy | None = None) -> Iterator[tuple[str, str]]:
    """(key, caption) of every sample of grounded or plain webdataset shards."""
    yield from iter_captions(pattern, policy)


def iter_source(source: str, fmt: str = "auto", policy: BadDataPolicy | None = None) -> Iterator[tuple[str, str]]:
    """(key, caption) pairs of ``source`` in format ``fmt`` (one of ``FORMATS``); ``policy`` handles the
    bad samples of the shard and HierarCaps readers (default: skip and count)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} unknown; known: {FORMATS}")
    fmt = detect_format(source) if fmt == "auto" else fmt
    if fmt == "grounded":
        return iter_grounded(source, policy)
    if fmt == "hierarcaps":
        return iter_hierarcaps(source, policy)
    return iter_table(source)


def write_parquet(table: pl.DataFrame, path: str | Path) -> Path:
    """Write ``table`` to ``path`` atomically (argent.io.atomic_output)."""
    with atomic_output(path) as tmp:
        table.write_parquet(tmp)
    return Path(path)


def summary_path(out: Path) -> Path:
    """The miner's JSON summary beside its parquet: ``<out without .parquet>.summary.json``."""
    return out.with_name(out.name.removesuffix(".parquet") + ".summary.json")
