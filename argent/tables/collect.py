"""Inputs of the tables as long polars frames, and what the workflow config asked for.

- ``collect``: results/eval/<variant>-<size>/seed<k>/<benchmark>.json -> one row per metric.
- ``collect_diagnostics``: results/runs/<variant>-<size>/seed<k>/metrics.jsonl -> the trainer's
  ``diag/*`` values at the last step that logged them (the end of training).
- ``configured_seeds``: the seeds the workflow config trains per variant (runs.seeds, or
  runs.seeds_by_variant), so that a table can say when a cell has fewer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from argent.io import flatten, read_json
from argent.runs import read_metrics, split_run

TUNED_VARIANT = "argent-tuned"  # the workflow's name for the tuned study's best trial, retrained

LONG_SCHEMA = {"variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64, "benchmark": pl.Utf8, "metric": pl.Utf8,
               "value": pl.Float64}
DIAG_SCHEMA = {"variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64, "step": pl.Int64, "key": pl.Utf8,
               "value": pl.Float64}


def _seed_of(folder: Path) -> int:
    try:
        return int(folder.name.removeprefix("seed"))
    except ValueError:
        raise ValueError(f"{folder}: expected a folder named seed<k>") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def collect(eval_dir: Path) -> pl.DataFrame:
    """One row per (variant, size, seed, benchmark, metric) with a numeric or null value."""
    rows = []
    for path in sorted(eval_dir.glob("*/seed*/*.json")):
        variant, size = split_run(path.parents[1].name)
        seed = _seed_of(path.parent)
        data = read_json(path)  # a torn or malformed file is an error naming it, before any table is written
        for metric, value in flatten(data.get("metrics", {}), sep="/").items():
            if value is None or _is_number(value):
                number = None if value is None or math.isnan(value) else float(value)
                rows.append({"variant": variant, "size": size, "seed": seed, "benchmark": path.stem,
                             "metric": metric, "value": number})
    return pl.DataFrame(rows, schema=LONG_SCHEMA)


def last_diagnostics(metrics_jsonl: Path, prefix: str = "diag/", also: tuple[str, ...] = ("curv",)
                     ) -> tuple[int, dict[str, float]] | None:
    """(step, {key without prefix: value}) of the last record that carries ``prefix`` keys, plus
    the keys in ``also`` (unprefixed, e.g. the curvature) from that same record."""
    last = None
    for record in read_metrics(metrics_jsonl):
        diag = {k.removeprefix(prefix): float(v) for k, v in record.items() if k.startswith(prefix) and _is_number(v)}
        if diag:
            diag.update({k: float(record[k]) for k in also if _is_number(record.get(k))})
            last = (int(record.get("step", -1)), diag)
    return last


def collect_diagnostics(runs_dir: Path) -> pl.DataFrame:
    """The end-of-training diagnostics of every run folder, one row per (run, key)."""
    rows = []
    for path in sorted(runs_dir.glob("*/seed*/metrics.jsonl")):
        found = last_diagnostics(path)
        if found is None:
            continue
        variant, size = split_run(path.parents[1].name)
        step, diag = found
        seed = _seed_of(path.parent)
        cone_k = _run_cone_k(path.parent / "config.yaml")
        if cone_k is not None:
            diag["cone_k"] = cone_k
        rows += [{"variant": variant, "size": size, "seed": seed, "step": step, "key": k, "value": v}
                 for k, v in diag.items()]
    return pl.DataFrame(rows, schema=DIAG_SCHEMA)


def _run_cone_k(config_yaml: Path) -> float | None:
    """The cone constant K the run used (its resolved config.yaml), for the aperture at a norm."""
    if not config_yaml.is_file():
        return None
    value = ((yaml.safe_load(config_yaml.read_text()) or {}).get("variant") or {}).get("cone_k")
    return float(value) if _is_number(value) else None


def configured_variants(cfg: dict[str, Any]) -> list[str]:
    """runs.variants, plus the tuned variant when the config trains one."""
    names = list(cfg.get("runs", {}).get("variants", []))
    tune = cfg.get("tune") or {}
    if tune.get("enabled") and tune.get("train_best", True):
        names.append(TUNED_VARIANT)
    return names


def configured_seeds(cfg: dict[str, Any], variant: str) -> list[int]:
    """The seeds the config trains ``variant`` with (as the workflow's run matrix does)."""
    runs = cfg.get("runs", {})
    by_variant = runs.get("seeds_by_variant") or {}
    return [int(k) for k in by_variant.get(variant, runs.get("seeds", []))]


def values_by_seed(long: pl.DataFrame, variant: str, size: str, benchmark: str, metric: str) -> dict[int, float | None]:
    """{seed: value} of one (variant, size, benchmark, metric); a null value stays None."""
    part = long.filter((pl.col("variant") == variant) & (pl.col("size") == size)
                       & (pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
    return dict(zip(part["seed"].to_list(), part["value"].to_list()))
