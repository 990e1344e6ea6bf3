"""A run's identity: the canonical form of the config values that change its result, and its hash.

``ExperimentConfig.result_hash`` (argent/config/experiment.py) is ``identity_hash`` of ``identity_of(cfg)``:

1. Walk the config dataclasses. A field that never changes the result (``EXCLUDED``: logging and
   checkpoint cadence, loader workers, the image cache switch, tracking, descriptions) is skipped.
2. A field whose value equals its *pinned default* contributes nothing. The pinned defaults
   (``argent/resources/identity_defaults.json``) are the dataclass defaults as they were when each
   field was recorded; a field newer than that file is compared with its current default (a new
   field's default must be neutral: it reproduces the behaviour before the field existed). Pinning
   is what makes a *changed* default visible: the runs that take it now differ from the pin, and
   only they change hash. Mappings (``cone_eta``) are compared key by key; a pinned key that is
   gone is recorded as ``{"__absent__": true}``. Required fields (variant name, size, seed) always
   contribute.
3. Hash: SHA-256 of canonical JSON (sorted keys, no spaces, floats as Python's shortest ``repr``,
   which ``json`` uses) of ``{"identity_version": IDENTITY_VERSION, "run": <the values of 2>}``,
   first 16 hex digits.

Adding a field with a neutral default therefore changes no hash; after adding one, record its
default with ``python scripts/pin_identity_defaults.py`` (adds missing fields only, never changes a
pinned value; tests/unit/core/test_run_identity.py fails until it is done).

Runs stamped before this scheme carry the *legacy* hash (every field, defaults included):
``legacy_hash`` recomputes it from a run folder's stored ``config.yaml`` so that such a run can be
recognised and re-stamped (``argent restamp``, argent/restamp/).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import typing
from pathlib import Path
from typing import Any

from argent.io import atomic_write_json, file_sha256

PINNED_FILE = Path(__file__).resolve().parents[1] / "resources" / "identity_defaults.json"  # argent/resources/
ABSENT = {"__absent__": True}  # a pinned mapping key the value no longer has

# Fields outside the identity: they never change a run's numbers (tests/unit/data/test_cache.py and
# tests/unit/tracking/test_tracking.py show it for the cache and the tags). True = the whole field or section.
# Identity v1 (EXCLUDED_V1) hashed the data's paths; v2 hashes what they hold instead (``run_identity``).
EXCLUDED_V1: dict[str, Any] = {
    "train": {"log_every": True, "diagnostics_every": True, "checkpoint_every": True, "num_workers": True,
              "data_streams": True},  # v1 split the streams by worker (max(1, num_workers)): see upgrade_v1
    "data": {"image_cache": True, "negatives_id": True},
    "variant": {"description": True},
    "tracking": True,
}
EXCLUDED: dict[str, Any] = {
    **EXCLUDED_V1,
    "train": {**EXCLUDED_V1["train"], "data_streams": False},  # False: in the identity
    "data": {**EXCLUDED_V1["data"], "train_shards": True, "negatives": True},  # paths: run_identity
}


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace, ASCII; ``json`` writes floats as their shortest ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _plain(value: Any) -> Any:
    """JSON-shaped value: tuples become lists (YAML and JSON have no tuples)."""
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _delta(value: Any, default: Any) -> Any:
    """What ``value`` adds to ``default``: None when equal, else the value (mappings: key by key)."""
    if isinstance(value, dict) and isinstance(default, dict):
        out = {}
        for key in sorted(set(value) | set(default)):
            if key not in value:
                out[key] = ABSENT
            elif key not in default:
                out[key] = value[key]
            else:
                sub = _delta(value[key], default[key])
                if sub is not None:
                    out[key] = sub
        return out or None
    return None if value == default else value  # 1 == 1.0: the typed config makes both floats anyway


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def identity_of(obj: Any, pinned: dict[str, Any] | None = None, excluded: dict[str, Any] | None = None) -> dict[str, Any]:
    """The values of dataclass ``obj`` that differ from their pinned (else current) default."""
    pinned = load_pinned() if pinned is None else pinned
    excluded = EXCLUDED if excluded is None else excluded
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        skip = excluded.get(f.name)
        if skip is True:
            continue
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            sub = identity_of(value, pinned.get(f.name) or {}, skip or {})
            if sub:
                out[f.name] = sub
            continue
        plain = _plain(value)
        default = pinned[f.name] if f.name in pinned else _field_default(f)
        if default is dataclasses.MISSING:
            out[f.name] = plain  # a required field (variant name, size, seed)
            continue
        diff = _delta(plain, _plain(default))
        if diff is not None:
            out[f.name] = diff
    return out


def run_identity(cfg: Any) -> dict[str, Any]:
    """An ``ExperimentConfig``'s identity (v2): ``identity_of`` without paths, then the data it reads.

    - The training data: ``data.dataset_hash`` when set (the workflow sets it for the embedded data
      set from its generator's parameters, argent/config/derived_paths.py; a user may declare one for theirs),
      else the shard pattern as written (name your data set to move it freely).
    - The hard-negatives table, only for a variant that reads it: ``data.negatives_id`` (the workflow's
      identity of the table it mines) else the content hash of the file or folder.
    Neither depends on where the results folder or the data live."""
    out = identity_of(cfg)
    data = dict(out.get("data", {}))
    if cfg.data.train_shards and not cfg.data.dataset_hash:
        data["train_shards"] = cfg.data.train_shards
    if cfg.data.negatives and cfg.variant.hard_negatives != "none":
        data["negatives"] = cfg.data.negatives_id or content_digest(cfg.data.negatives)
    if data:
        out["data"] = data
    return out


def v1_hash(cfg: Any) -> str:
    """The hash identity v1 gave ``cfg`` (paths hashed as written): what a v1 checkpoint carries."""
    return identity_hash(identity_of(cfg, excluded=EXCLUDED_V1), 1)


def content_digest(path: str) -> str:
    """16 hex digits of SHA-256 over a file, or over a folder's files (names and contents, sorted);
    "missing" when there is nothing there (the trainer then names the path)."""
    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    if not files:
        return "missing"
    parts = [f"{f.relative_to(p) if p.is_dir() else ''}:{_file_digest(str(f), *_stamp(f))}" for f in files]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """Cached by size and time: a config is hashed many times per process (plan, tables)."""
    return file_sha256(path)


def stable_hash(obj: Any) -> str:
    """16 hex digits of SHA-256 over sorted-key JSON (``str`` for anything JSON lacks): a job's ``hash``
    param, a data set's identity, a workflow config's hash."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def identity_hash(identity: dict[str, Any], version: int) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of the identity and its version."""
    text = canonical_json({"identity_version": version, "run": identity})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def first_difference(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> str | None:
    """The first key path (sorted, dotted) where two identities differ, or None when equal."""
    for key in sorted(set(a) | set(b)):
        path = f"{prefix}.{key}" if prefix else key
        x, y = a.get(key, ABSENT), b.get(key, ABSENT)
        if isinstance(x, dict) and isinstance(y, dict) and x is not ABSENT and y is not ABSENT:
            sub = first_difference(x, y, path)
            if sub:
                return sub
        elif x != y:
            return path
    return None


def legacy_hash(raw: dict[str, Any]) -> str:
    """The hash argent wrote before identity version 1: every field of the stored resolved config
    (``config.yaml`` as written), less logging, checkpointing, tracking, cache and description."""
    d = json.loads(json.dumps(raw))  # a deep copy
    for key in ("log_every", "diagnostics_every", "checkpoint_every", "num_workers"):
        (d.get("train") or {}).pop(key, None)
    d.pop("tracking", None)
    (d.get("data") or {}).pop("image_cache", None)
    (d.get("variant") or {}).pop("description", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


# ---- the pinned defaults -------------------------------------------------------------------------

_PINNED: dict[str, Any] | None = None


def load_pinned() -> dict[str, Any]:
    global _PINNED
    if _PINNED is None:
        _PINNED = json.loads(PINNED_FILE.read_text())["defaults"] if PINNED_FILE.is_file() else {}
    return _PINNED


def current_defaults(cls: type, excluded: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every identity field's current default, nested as the config (the pin file's shape)."""
    excluded = EXCLUDED if excluded is None else excluded
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        skip = excluded.get(f.name)
        if skip is True:
            continue
        if dataclasses.is_dataclass(hints[f.name]):
            out[f.name] = current_defaults(hints[f.name], skip or {})
            continue
        default = _field_default(f)
        if default is not dataclasses.MISSING:
            out[f.name] = _plain(default)
    return out


def missing_pins(cls: type, pinned: dict[str, Any], excluded: dict[str, Any] | None = None,
                 prefix: str = "") -> dict[str, Any]:
    """The identity fields of ``cls`` that ``pinned`` lacks: dotted path -> current default."""
    excluded = EXCLUDED if excluded is None else excluded
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        skip, path = excluded.get(f.name), f"{prefix}{f.name}"
        if skip is True:
            continue
        if dataclasses.is_dataclass(hints[f.name]):
            out.update(missing_pins(hints[f.name], pinned.get(f.name) or {}, skip or {}, f"{path}."))
        elif f.name not in pinned and _field_default(f) is not dataclasses.MISSING:
            out[path] = _plain(_field_default(f))
    return out


def pin_new(cls: type, path: Path = PINNED_FILE) -> list[str]:
    """Add the fields the pin file lacks, at their current defaults; a pinned value never changes
    (changing one is an identity version bump: argent/config/experiment.py, IDENTITY_VERSION)."""
    data = json.loads(path.read_text()) if path.is_file() else {"defaults": {}}
    added = missing_pins(cls, data["defaults"])
    for dotted, value in added.items():
        node = data["defaults"]
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    atomic_write_json(path, data)
    global _PINNED
    _PINNED = None
    return sorted(added)
