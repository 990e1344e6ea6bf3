"""Benchmark entries: a protocol plus its data, as validated config.

The workflow config holds ``benchmarks: <name>: {protocol: <protocol>, <data paths>, <options>}``.
The embedded (hiershapes) and the real data sets are both just entries: they name the same
protocols and go through the same readers. Every entry is validated strictly: an unknown key
fails with ``benchmarks.<name>.<key>`` and the allowed keys; a wrong type with its key path.

Relative paths are resolved against the working directory (the project root when run by the
workflow) or the ``base_dir`` given to ``load_benchmark``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, check_name, from_dict, load_workflow_config
from argent.evaluation.zeroshot import resolve_templates

__all__ = [
    "PROTOCOLS",
    "CommonOptions",
    "ZeroShotEntry",
    "RetrievalEntry",
    "PepEntry",
    "HierarCapsEntry",
    "CompositionalEntry",
    "AnalysisEntry",
    "parse_benchmark",
    "load_benchmark",
    "entry_hash",
]


@dataclass
class CommonOptions:
    """Keys every protocol accepts."""

    protocol: str = ""
    bad_data: Literal["skip", "strict"] = "skip"  # skip-and-count or stop at the first bad item
    limit: int = 0  # the first N items only (0 = all); per class (zeroshot) / per category (compositional)
    batch_size: int = 64  # images / texts per encoder forward
    chunk_size: int = 1024  # queries per score block (memory ∝ chunk_size × key_chunk)
    key_chunk: int = 8192  # keys per score block
    num_workers: int = 0  # image decoding workers
    optional: bool = False  # missing data: skipped with one line (true) or an error at DAG build (false)

    def __post_init__(self) -> None:
        for key in ("batch_size", "chunk_size", "key_chunk"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}: must be >= 1, got {getattr(self, key)}")
        if self.limit < 0 or self.num_workers < 0:
            raise ConfigError("limit / num_workers: must be >= 0")


@dataclass
class ZeroShotEntry(CommonOptions):
    """Zero-shot classification on an image-folder split (``<root>/<class id>/*.jpg``)."""

    root: str = ""
    templates: list[str] | str = "default"  # a list of '{}' templates or a named set (zeroshot.TEMPLATE_SETS)
    taxonomy: str = ""  # 'parent child' class-id edges; enables the WordNet hierarchy metrics

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            resolve_templates(self.templates)
        except ValueError as err:
            raise ConfigError(str(err)) from None


@dataclass
class RetrievalEntry(CommonOptions):
    """Image–text retrieval R@k in both directions."""

    format: Literal["karpathy", "coco"] = "karpathy"
    annotations: str = ""  # Karpathy dataset_*.json or COCO captions_*.json
    image_dir: str = ""
    split: str = "test"  # Karpathy split
    ks: list[int] = field(default_factory=lambda: [5, 10])

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.ks or any(k < 1 for k in self.ks):
            raise ConfigError(f"ks: need at least one k >= 1, got {self.ks}")


@dataclass
class PepEntry(CommonOptions):
    """PEP on a HierarCaps-format split; pairs from the cleaning step's files when present."""

    hierarcaps_csv: str = ""  # the whole split (fallback when clean_csv is absent)
    image_dir: str = ""
    clean_csv: str = ""  # cleaned subset, HierarCaps format (argent clean)
    negative_pool: str = ""  # negative_pool.csv with a 'caption' column (argent clean)
    block_entries: int = 1 << 22  # angles per scoring block (memory bound)


@dataclass
class HierarCapsEntry(CommonOptions):
    """The original HierarCaps protocol: Kendall τ of radius vs level, threshold retrieval."""

    hierarcaps_csv: str = ""
    image_dir: str = ""
    steps: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps < 2:
            raise ConfigError(f"steps: need >= 2 thresholds, got {self.steps}")


@dataclass
class CompositionalEntry(CommonOptions):
    """SugarCrepe-format items: ``<json_dir>/<category>.json`` + images matched by COCO id."""

    json_dir: str = ""
    image_dir: str = ""
    categories: list[str] = field(default_factory=list)  # empty = every JSON file found


@dataclass
class AnalysisEntry(CommonOptions):
    """Norm distributions and a 2-D projection; every source is optional, at least one needed."""

    hierarcaps_csv: str = ""  # images + caption levels 1–4
    image_dir: str = ""
    shards: str = ""  # grounded webdataset shards (image, caption, crop, phrase)
    min_box_area: int = 1024  # crop rule threshold in pixels (HyCoCLIP 32·32; hiershapes' manifest gives its own)
    max_points: int = 1000  # points per item type in the projection figure
    seed: int = 0


PROTOCOLS: dict[str, type[CommonOptions]] = {
    "zeroshot": ZeroShotEntry,
    "retrieval": RetrievalEntry,
    "pep": PepEntry,
    "hierarcaps": HierarCapsEntry,
    "compositional": CompositionalEntry,
    "analysis": AnalysisEntry,
}

_REQUIRED: dict[str, tuple[str, ...]] = {
    "zeroshot": ("root",),
    "retrieval": ("annotations", "image_dir"),
    "pep": ("hierarcaps_csv", "image_dir"),
    "hierarcaps": ("hierarcaps_csv", "image_dir"),
    "compositional": ("json_dir", "image_dir"),
    "analysis": (),
}
_PATH_KEYS = ("root", "taxonomy", "annotations", "image_dir", "hierarcaps_csv", "clean_csv", "negative_pool", "json_dir")


def parse_benchmark(name: str, raw: Any, base_dir: str | Path | None = None) -> CommonOptions:
    """Validate one ``benchmarks.<name>`` mapping into its protocol's entry dataclass.

    Relative data paths are made absolute against ``base_dir`` (default: the working directory).
    """
    where = f"benchmarks.{name}"
    check_name(name, "benchmark")
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with a 'protocol' key, got {type(raw).__name__}")
    protocol = raw.get("protocol")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"{where}.protocol: {protocol!r} is not allowed; allowed: {sorted(PROTOCOLS)}")
    cls = PROTOCOLS[protocol]
    allowed = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: unknown key for protocol {protocol!r}; allowed: {allowed}")
    entry = from_dict(cls, dict(raw), where)
    if protocol == "analysis" and not (entry.hierarcaps_csv or entry.shards):
        raise ConfigError(f"{where}: analysis needs hierarcaps_csv (+ image_dir) and/or shards")
    if protocol == "analysis" and entry.hierarcaps_csv and not entry.image_dir:
        raise ConfigError(f"{where}.image_dir: required with hierarcaps_csv")
    for key in _REQUIRED[protocol]:
        if not getattr(entry, key):
            raise ConfigError(f"{where}.{key}: required for protocol {protocol!r}")
    # The entry as written (relative paths kept), so its hash does not depend on the machine.
    entry.as_written = dataclasses.asdict(entry)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    for key in _PATH_KEYS:
        value = getattr(entry, key, "")
        if value and not Path(value).is_absolute():
            setattr(entry, key, str(base / value))
    if isinstance(entry, AnalysisEntry) and entry.shards and not Path(entry.shards).is_absolute():
        entry.shards = str(base / entry.shards)
    return entry


def load_benchmark(config_path: str | Path, name: str, base_dir: str | Path | None = None,
                   overrides: list[str] | tuple[str, ...] = ()) -> CommonOptions:
    """The validated entry ``benchmarks.<name>`` of a workflow config file (``--set`` overrides on top)."""
    cfg = load_workflow_config(config_path, overrides)
    benchmarks = cfg.get("benchmarks")
    if not isinstance(benchmarks, dict) or not benchmarks:
        raise ConfigError(f"{config_path}: no 'benchmarks' section (benchmarks: <name>: {{protocol: ...}})")
    if name not in benchmarks:
        raise ConfigError(f"{config_path}: benchmarks.{name} not found; known: {sorted(benchmarks)}")
    return parse_benchmark(name, benchmarks[name], base_dir)


def entry_hash(entry: CommonOptions) -> str:
    """Hash of what changes an entry's result (not batch/chunk sizes or workers), paths as written."""
    d = dict(getattr(entry, "as_written", None) or dataclasses.asdict(entry))
    for key in ("batch_size", "chunk_size", "key_chunk", "num_workers", "block_entries", "optional"):
        d.pop(key, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]
