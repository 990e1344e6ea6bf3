"""The study's validation benchmarks, checked before anything trains: each objective term reads a
validation split (never a test benchmark's files) and a metric its protocol writes.

Torch-free, so that the DAG build and ``argent check`` refuse a misspelt objective before a job runs
(``argent.tuning.objective`` scores the trials).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from argent.config import ConfigError
from argent.evaluation.benchmarks import (
    CLEANED,
    ITEMS,
    PepEntry,
    RetrievalEntry,
    ZeroShotEntry,
    entry_paths,
    parse_benchmark,
)
from argent.evaluation.hierarchy import HIERARCHY_METRICS
from argent.protocols.registry import PROTOCOLS
from argent.tuning.config import TuneConfig

__all__ = ["check_objective_metrics", "produced_metrics", "validation_benchmarks"]


def _data_files(raw: dict[str, Any]) -> set[str]:
    """The item files an entry reads (its protocol's ITEMS and CLEANED paths); a validation entry must
    not share one with a test entry (images may be shared between splits)."""
    return {str(Path(p)) for p in entry_paths(raw, (ITEMS, CLEANED)).values()}


def validation_benchmarks(tune: TuneConfig, workflow: dict[str, Any], base_dir: str | Path | None = None) -> dict[str, Any]:
    """The parsed benchmark entries the objective reads; each must be a validation split."""
    section = workflow.get("benchmarks") or {}
    entries = {}
    for i, term in enumerate(tune.objective):
        name, where = term.benchmark, f"tune.objective[{i}].benchmark"
        if name in entries:
            continue
        if name not in section:
            raise ConfigError(f"{where}: {name!r} is not under benchmarks:; known: {sorted(section)}")
        raw = dict(section[name] or {})
        if raw.get("split") != "val":
            raise ConfigError(
                f"{where}: benchmarks.{name} is not a validation benchmark (split: {raw.get('split')!r}); "
                f"tuning may only read validation data. Point a benchmark entry at a validation split and "
                f"mark it split: val (never the test split)."
            )
        protocol = PROTOCOLS.get(raw.get("protocol"))
        if protocol is not None and "split" not in {f.name for f in dataclasses.fields(protocol.entry_type())}:
            # ``split`` is only a label for this protocol (parse_benchmark drops it): its files must
            # be no test benchmark's
            for other, other_raw in section.items():
                shared = _data_files(raw) & _data_files(other_raw or {})
                if other != name and (other_raw or {}).get("split") != "val" and shared:
                    raise ConfigError(
                        f"{where}: benchmarks.{name} is marked split: val but reads {sorted(shared)[0]}, "
                        f"the data of the test benchmark benchmarks.{other}; give it a validation split's files."
                    )
        entries[name] = parse_benchmark(name, raw, base_dir)
    check_objective_metrics(tune, entries)
    return entries


_PEP_LEVELS = re.compile(r"^(auc|ap)_L\d+$")  # one per caption level of the data


def produced_metrics(entry: Any) -> tuple[set[str], re.Pattern[str] | None] | None:
    """The metric keys a benchmark entry's result holds (names, and a pattern for the per-level
    ones), known from its protocol and options before anything runs; None where they depend on the
    data (compositional categories, the analysis), which are then found when the first trial scores."""
    if isinstance(entry, ZeroShotEntry):
        return {"top1", "mean_per_class", "n_classes_evaluated", *(HIERARCHY_METRICS if entry.taxonomy else ())}, None
    if isinstance(entry, RetrievalEntry):
        return {f"{d}_R@{k}" for d in ("i2t", "t2i") for k in entry.ks}, None
    if isinstance(entry, PepEntry):
        return {"auc", "ap", "raw_auc", "raw_ap", "n_positive", "n_negative", "mean_phi_positive",
                "mean_phi_negative", "zero_score_share"}, _PEP_LEVELS
    return None


def check_objective_metrics(tune: TuneConfig, entries: dict[str, Any]) -> None:
    """Each objective term's metric one its benchmark produces, before any trial trains (a typo used
    to surface as an Optuna traceback once trial 0 had trained and scored)."""
    for i, term in enumerate(tune.objective):
        known = produced_metrics(entries[term.benchmark])
        if known is None:
            continue
        names, pattern = known
        if term.metric not in names and not (pattern is not None and pattern.match(term.metric)):
            listed = sorted(names) + ([pattern.pattern] if pattern is not None else [])
            raise ConfigError(f"tune.objective[{i}].metric: {term.metric!r} is not a metric of benchmarks."
                              f"{term.benchmark} (protocol {entries[term.benchmark].protocol}); its metrics: {listed}")
