"""Caption sources for ``argent mine`` and atomic writers for its outputs.

Sources yield ``(key, caption)``:
- ``grounded``: webdataset shards (a glob/brace pattern of .tar), through
  ``argent.data.formats.grounded.iter_captions`` (no image decoding);
- ``hierarcaps``: ``hierarcaps_test.csv`` (``id, captions, image_url``), key = ``id``, caption = the
  most specific level (the last " => " item, the original COCO caption);
- ``table``: a CSV or parquet file with ``key`` and ``caption`` columns.
``auto`` picks by name: .tar or a pattern -> grounded; .parquet -> table; .csv -> hierarcaps when it
has a ``captions`` column, table when it has ``key`` and ``caption``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from argent.data.formats.grounded import iter_captions

FORMATS = ("auto", "grounded", "hierarcaps", "table")
LEVEL_SEPARATOR = " => "


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


def iter_hierarcaps(path: str | Path) -> Iterator[tuple[str, str]]:
    """(id, level-4 caption) per row of a HierarCaps CSV; a row without captions raises naming it."""
    path = Path(path)
    table = _read_table(path)
    missing = {"id", "captions"} - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}; a HierarCaps CSV has id, captions, image_url")
    for row, (key, captions) in enumerate(zip(table["id"].to_list(), table["captions"].to_list())):
        if key is None or captions is None or not captions.strip():
            raise ValueError(f"{path}: data row {row + 1} (id {key!r}) has no id or no captions")
        yield str(key), captions.split(LEVEL_SEPARATOR)[-1].strip()


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


def iter_grounded(pattern: str) -> Iterator[tuple[str, str]]:
    """(key, caption) of every sample of grounded or plain webdataset shards."""
    yield from iter_captions(pattern)


def iter_source(source: str, fmt: str = "auto") -> Iterator[tuple[str, str]]:
    """(key, caption) pairs of ``source`` in format ``fmt`` (one of ``FORMATS``)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} unknown; known: {FORMATS}")
    fmt = detect_format(source) if fmt == "auto" else fmt
    if fmt == "grounded":
        return iter_grounded(source)
    if fmt == "hierarcaps":
        return iter_hierarcaps(source)
    return iter_table(source)


def _atomic_path(path: Path, suffix: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    return tmp


def write_parquet(table: pl.DataFrame, path: str | Path) -> Path:
    """Write ``table`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    tmp = _atomic_path(path, ".tmp")
    try:
        table.write_parquet(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_json(data: Any, path: str | Path) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    path = Path(path)
    tmp = _atomic_path(path, ".tmp")
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def summary_path(out: Path) -> Path:
    """The miner's JSON summary beside its parquet: ``<out without .parquet>.summary.json``."""
    return out.with_name(out.name.removesuffix(".parquet") + ".summary.json")
