"""Benchmark entries: a protocol plus its data, as validated config.

The workflow config holds ``benchmarks: <name>: {protocol: <protocol>, <data paths>, <options>}``.
The embedded (hiershapes) and the real data sets are both just entries: they name the same
protocols and go through the same readers. Every entry is validated strictly: an unknown key
fails with ``benchmarks.<name>.<key>`` and the allowed keys; a wrong type with its key path.

Relative paths are resolved against the working directory (the project root when run by the
workflow) or the ``base_dir`` given to ``load_benchmark``.

Each protocol's entry dataclass is here; its record (the entry type, the run function, its metrics'
kinds and units, its embedded files) is one line of ``argent.protocols.registry.PROTOCOLS``. The entry's data
paths are declared on its fields (``data_path``); the runner, ``argent check``, the DAG's inputs, the tables'
data domains and tuning's leak check all read them from here. Adding a protocol: docs/architecture.md,
"How to add".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, check_name, check_range, from_dict, load_config
from argent.evaluation.templates import resolve_templates
from argent.protocols.registry import PROTOCOLS

__all__ = [
    "data_path",
    "entry_paths",
    "ITEMS",
    "IMAGES",
    "SHARDS",
    "SIDE",
    "CLEANED",
    "CLEANED_SIDE",
    "CommonOptions",
    "ZeroShotEntry",
    "RetrievalEntry",
    "PepEntry",
    "HierarCapsEntry",
    "CompositionalEntry",
    "AnalysisEntry",
    "parse_benchmark",
    "benchmarks_section",
    "load_benchmark",
    "entry_hash",
]


# What a data path of an entry holds. The kinds decide who looks at it: ``argent check`` wants the
# source files (ITEMS, IMAGES, SIDE) present; the tables read a benchmark's data domain from ITEMS,
# IMAGES and SHARDS; a tuning benchmark marked ``split: val`` may not share an ITEMS or CLEANED file
# with a test benchmark; CLEANED and CLEANED_SIDE are written by ``argent clean`` (the entry falls
# back to its ITEMS file when they are absent).
ITEMS = "items"  # the file or folder listing the test items
IMAGES = "images"  # where the items' images are read (splits may share it)
SHARDS = "shards"  # a webdataset shard pattern (its reader names a missing shard)
SIDE = "side"  # a side file that adds metrics (a taxonomy)
CLEANED = "cleaned"  # the cleaned subset of the items (argent clean)
CLEANED_SIDE = "cleaned_side"  # a side file written by argent clean (the negative pool)
PATH_KINDS = (ITEMS, IMAGES, SHARDS, SIDE, CLEANED, CLEANED_SIDE)
# ``split:`` on an entry whose protocol has no split of its own: which split its files are
# (argent/tuning/objective.py reads only ``val`` entries).
SPLIT_LABELS = ("val", "test")


def data_path(kind: str, *, required: bool = False) -> Any:
    """A path field of a benchmark entry: ``kind`` is one of ``PATH_KINDS``; ``required``: the entry
    is refused without it. A relative path is taken from the base folder when the entry is parsed."""
    if kind not in PATH_KINDS:
        raise ValueError(f"data_path: kind {kind!r} is not one of {PATH_KINDS}")
    return field(default="", metadata={"path_kind": kind, "required": required})


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
        for f in dataclasses.fields(self):
            if f.metadata.get("required") and not getattr(self, f.name):
                raise ConfigError(f"{f.name}: required for protocol {self.protocol!r}")


@dataclass
class ZeroShotEntry(CommonOptions):
    """Zero-shot classification on an image-folder split (``<root>/<class id>/*.jpg``)."""

    root: str = data_path(ITEMS, required=True)  # <root>/<class id>/*.jpg
    templates: list[str] | str = "default"  # a list of '{}' templates or a named set (templates.TEMPLATE_SETS)
    taxonomy: str = data_path(SIDE)  # 'parent child' class-id edges; enables the WordNet hierarchy metrics

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
    annotations: str = data_path(ITEMS, required=True)  # Karpathy dataset_*.json or COCO captions_*.json
    image_dir: str = data_path(IMAGES, required=True)
    split: str = "test"  # Karpathy split
    ks: list[int] = field(default_factory=lambda: [5, 10])
    # Galleries of this many images (consecutive folds, as COCO's 5 × 1K test), R@k averaged over every
    # query of every fold; 0 = one gallery of the whole split. Recall falls with the gallery's size, so a
    # larger test set keeps its numbers comparable with a smaller one's at the smaller one's size.
    fold_size: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.ks or any(k < 1 for k in self.ks):
            raise ConfigError(f"ks: need at least one k >= 1, got {self.ks}")
        if self.fold_size < 0:
            raise ConfigError(f"fold_size: must be >= 0 (0: one gallery), got {self.fold_size}")


@dataclass
class PepEntry(CommonOptions):
    """PEP on a HierarCaps-format split; pairs from the cleaning step's files when present."""

    hierarcaps_csv: str = data_path(ITEMS, required=True)  # the whole split (fallback when clean_csv is absent)
    image_dir: str = data_path(IMAGES, required=True)
    clean_csv: str = data_path(CLEANED)  # cleaned subset, HierarCaps format (argent clean)
    negative_pool: str = data_path(CLEANED_SIDE)  # negative_pool.csv with a 'caption' column (argent clean)
    block_entries: int = 1 << 22  # angles per scoring block (memory bound)


@dataclass
class HierarCapsEntry(CommonOptions):
    """The original HierarCaps protocol: Kendall τ of radius vs level, threshold retrieval."""

    hierarcaps_csv: str = data_path(ITEMS, required=True)
    image_dir: str = data_path(IMAGES, required=True)
    steps: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps < 2:
            raise ConfigError(f"steps: need >= 2 thresholds, got {self.steps}")


@dataclass
class CompositionalEntry(CommonOptions):
    """SugarCrepe-format items: ``<json_dir>/<category>.json`` + images matched by COCO id."""

    json_dir: str = data_path(ITEMS, required=True)
    image_dir: str = data_path(IMAGES, required=True)
    categories: list[str] = field(default_factory=list)  # empty = every JSON file found


@dataclass
class AnalysisEntry(CommonOptions):
    """Norm distributions and a 2-D projection; every source is optional, at least one needed."""

    hierarcaps_csv: str = data_path(ITEMS)  # images + caption levels 1–4
    image_dir: str = data_path(IMAGES)
    shards: str = data_path(SHARDS)  # grounded webdataset shards (image, caption, crop, phrase)
    min_box_area: int = 1024  # crop rule threshold in pixels (HyCoCLIP 32·32; hiershapes' manifest gives its own)
    max_points: int = 1000  # points per item type in the projection figure
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("max_points", self.max_points, low=1)  # 0: no point to project; -1 dropped one silently
        if not (self.hierarcaps_csv or self.shards):
            raise ConfigError("hierarcaps_csv: analysis needs hierarcaps_csv (+ image_dir) and/or shards")
        if self.hierarcaps_csv and not self.image_dir:
            raise ConfigError("image_dir: required with hierarcaps_csv")


def _path_fields(cls: type[CommonOptions]) -> dict[str, str]:
    return {f.name: f.metadata["path_kind"] for f in dataclasses.fields(cls) if "path_kind" in f.metadata}


def entry_paths(raw: dict[str, Any], kinds: Iterable[str] = PATH_KINDS) -> dict[str, str]:
    """{key: path as written} of a raw ``benchmarks.<name>`` mapping, for the path fields of the given
    kinds (its protocol's entry declares them); empty for an unknown protocol (parsing reports that)."""
    protocol = PROTOCOLS.get(raw.get("protocol")) if isinstance(raw, dict) else None
    if protocol is None:
        return {}
    wanted = set(kinds)
    return {key: raw[key] for key, kind in _path_fields(protocol.entry_type()).items()
            if kind in wanted and isinstance(raw.get(key), str) and raw[key]}


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
    cls = PROTOCOLS[protocol].entry_type()
    allowed = [f.name for f in dataclasses.fields(cls)]
    raw = dict(raw)
    if "split" not in allowed and "split" in raw:  # a label only (tuning reads split: val entries)
        if raw.pop("split") not in SPLIT_LABELS:
            raise ConfigError(f"{where}.split: a label for tuning here; one of {SPLIT_LABELS}")
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: unknown key for protocol {protocol!r}; allowed: {allowed}")
    entry = from_dict(cls, dict(raw), where)
    # The entry as written (relative paths kept), so its hash does not depend on the machine.
    entry.as_written = dataclasses.asdict(entry)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    for key in _path_fields(cls):
        value = getattr(entry, key)
        if value and not Path(value).is_absolute():
            setattr(entry, key, str(base / value))
    return entry


def benchmarks_section(raw: dict[str, Any], base_dir: str | Path | None = None) -> dict[str, CommonOptions]:
    """Every entry of a workflow config mapping's ``benchmarks:`` section, validated (absent: none)."""
    section = raw.get("benchmarks") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"benchmarks: expected a mapping of names to entries, got {type(section).__name__}")
    return {name: parse_benchmark(name, entry, base_dir) for name, entry in section.items()}


def load_benchmark(config_path: str | Path, name: str, base_dir: str | Path | None = None,
                   overrides: list[str] | tuple[str, ...] = ()) -> CommonOptions:
    """The validated entry ``benchmarks.<name>`` of a workflow config file alone (``--set`` overrides
    on top; argent.config.workflow, the one door)."""
    return load_config(config_path, overrides, base_dir=base_dir, merge_default=False).benchmark(name)


def entry_hash(entry: CommonOptions) -> str:
    """Hash of what changes an entry's result (not batch/chunk sizes or workers), paths as written."""
    d = dict(getattr(entry, "as_written", None) or dataclasses.asdict(entry))
    for key in ("batch_size", "chunk_size", "key_chunk", "num_workers", "block_entries", "optional"):
        d.pop(key, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]
