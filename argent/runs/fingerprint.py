"""Content fingerprints of the files a run reads: what its stamp records beside (never inside) its identity.

A run's identity hash names its data by what the config says (``data.dataset_hash``, the negatives'
``negatives_id``: argent/runs/identity.py), so it cannot see a shard replaced under the same name or a
table edited in place. The trainer therefore records, for every file it reads, a fingerprint in the
checkpoint and in ``summary.json`` (``inputs``): ``{kind: {name: [size, mtime_ns, digest]}}``, the name
relative to the files' common folder (so a moved data folder still matches). The record never enters
the identity hash: a run stamped before it existed has none, and is never re-planned for lack of one.

The digest, as DVC and Snakemake's checksums do, is cheap to check and exact where it is cheap to be:

- a file up to ``FULL_LIMIT`` (32 MiB) is hashed whole: ``sha256:<hex>`` of every byte;
- a larger file is sampled: ``sample:<hex>``, SHA-256 of its size and ``BLOCKS`` (16) blocks of
  ``BLOCK`` (64 KiB) at evenly spaced offsets, the first and the last included: 1 MiB read whatever
  its size. An edit that keeps the size and the time stamp, or keeps the size and touches no sampled
  block, is not seen (a replaced or re-written shard changes its size or its sampled bytes).

Checking a recorded fingerprint (``compare``) costs a ``stat`` per file: the same size and modification
time is the same file (make's rule, and Snakemake's); another size is another file, read nothing; the
same size with another time (a copy without ``cp -a``, a ``touch``) is settled by the digest. The DAG
build, which must not read a paper-size data set, re-reads at most ``PLAN_REHASH`` (64) such files, spread
evenly over them by name: a few changed files are each checked, a re-provisioned folder on a sample.
Torch-free: the DAG build imports it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.io import ArgentError

__all__ = ["BLOCK", "BLOCKS", "FULL_LIMIT", "PLAN_REHASH", "Change", "Fingerprint", "compare", "file_digest",
           "fingerprint", "input_names", "read_record", "record", "record_difference"]

FULL_LIMIT = 32 * 2**20  # bytes: a file up to this size is hashed whole
BLOCKS, BLOCK = 16, 64 * 2**10  # a larger one: 16 blocks of 64 KiB (1 MiB read)
PLAN_REHASH = 64  # the most files the DAG build re-reads (their size kept, their time changed)


@dataclass(frozen=True)
class Fingerprint:
    """One file as a run read it: size, modification time (ns) and content digest."""

    size: int
    mtime_ns: int
    digest: str

    def to_json(self) -> list[Any]:
        return [self.size, self.mtime_ns, self.digest]

    @classmethod
    def from_json(cls, value: Any) -> Fingerprint | None:
        """The fingerprint of a record's entry; None when it is not one (a damaged or foreign record)."""
        if (isinstance(value, list) and len(value) == 3 and all(type(v) is int and v >= 0 for v in value[:2])
                and isinstance(value[2], str) and value[2].partition(":")[0] in ("sha256", "sample")):
            return cls(value[0], value[1], value[2])
        return None


def _regular(path: Path) -> os.stat_result:
    """``stat`` of a regular file; anything else (a folder, a FIFO, a device) is an ``ArgentError`` naming
    it, raised before any read, so a FIFO never blocks the reader."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ArgentError(f"{path}: not a regular file (a folder, FIFO or device); a run reads regular files only")
    return info


@functools.lru_cache(maxsize=65536)
def _cached_digest(path: str, size: int, mtime_ns: int) -> str:
    """Cached by size and time: the DAG build compares many runs that read the same shards."""
    return file_digest(Path(path), size)


def file_digest(path: Path, size: int) -> str:
    """``sha256:<hex>`` of the whole file up to ``FULL_LIMIT``, else ``sample:<hex>`` (module doc)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_LIMIT:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
            return f"sha256:{digest.hexdigest()}"
        digest.update(f"{size}:{BLOCKS}x{BLOCK}\n".encode())
        for i in range(BLOCKS):
            f.seek(round(i * (size - BLOCK) / (BLOCKS - 1)))
            digest.update(f.read(BLOCK))
    return f"sample:{digest.hexdigest()}"


def fingerprint(path: Path, known: Fingerprint | None = None) -> Fingerprint:
    """The file's fingerprint; ``known`` (an earlier record) is reused when size and time are unchanged
    (the cheap part: one ``stat``, no read)."""
    info = _regular(path)
    if known is not None and (known.size, known.mtime_ns) == (info.st_size, info.st_mtime_ns):
        return known
    return Fingerprint(info.st_size, info.st_mtime_ns, _cached_digest(str(path), info.st_size, info.st_mtime_ns))


def _root(files: Sequence[Path]) -> Path:
    return Path(os.path.commonpath([str(Path(f).absolute().parent) for f in files]))


def input_names(files: Sequence[Path]) -> dict[str, Path]:
    """{name: path}: each file named relative to the files' common folder (moving the folder keeps the names)."""
    if not files:
        return {}
    root = _root(files)
    return {Path(f).absolute().relative_to(root).as_posix(): Path(f) for f in sorted(files)}


def record(files: Sequence[Path], known: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """``{name: [size, mtime_ns, digest]}`` of ``files``, reusing ``known``'s digest of a file whose size and
    time are unchanged."""
    known = known or {}
    return {name: fingerprint(path, Fingerprint.from_json(known.get(name))).to_json()
            for name, path in input_names(files).items()}


def read_record(value: Any) -> dict[str, Fingerprint] | None:
    """A recorded ``{name: fingerprint}``; None for anything else (no record, or one this code cannot read:
    such a run is treated as one stamped before fingerprints, never as changed)."""
    if not isinstance(value, dict) or not value:
        return None
    out = {name: Fingerprint.from_json(fp) for name, fp in value.items()}
    return out if all(isinstance(n, str) and fp is not None for n, fp in out.items()) else None  # type: ignore[misc]


@dataclass(frozen=True)
class Change:
    """The first difference between a recorded input set and the files there now, and how many differ."""

    path: str
    what: str
    count: int = 1

    def line(self) -> str:
        more = f" (and {self.count - 1} other file(s))" if self.count > 1 else ""
        return f"{self.path}: {self.what}{more}"


def compare(recorded: Mapping[str, Fingerprint], files: Sequence[Path], rehash_limit: int | None = None
            ) -> Change | None:
    """How ``files`` differ from ``recorded`` (None: the same bytes, as far as the module doc's rules
    tell). ``rehash_limit``: the most files of kept size and changed time whose digest is re-read (None:
    all of them)."""
    current = input_names(files)
    changes: list[tuple[str, str]] = []
    root = _root(files) if files else Path(".")
    for name in sorted(set(recorded) - set(current)):
        changes.append((str(root / name), "read by the run, gone now"))
    for name in sorted(set(current) - set(recorded)):
        changes.append((str(current[name]), "not among the files the run read (a file added since)"))
    touched: list[tuple[str, Fingerprint]] = []
    for name in sorted(set(current) & set(recorded)):
        old, path = recorded[name], current[name]
        try:
            info = _regular(path)
        except (ArgentError, OSError) as err:
            changes.append((str(path), f"unreadable now ({getattr(err, 'strerror', None) or err})"))
            continue
        if info.st_size != old.size:
            changes.append((str(path), f"{info.st_size} bytes, {old.size} when the run read it"))
        elif info.st_mtime_ns != old.mtime_ns:
            touched.append((name, old))
    if rehash_limit is not None and len(touched) > rehash_limit:
        step = len(touched) / rehash_limit
        touched = [touched[int(i * step)] for i in range(rehash_limit)]
    for name, old in touched:
        now = fingerprint(current[name])
        if now.digest != old.digest:
            changes.append((str(current[name]), "other bytes than the run read (same size, new content)"))
    if not changes:
        return None
    return Change(changes[0][0], changes[0][1], len(changes))


def record_difference(old: Any, new: Mapping[str, Mapping[str, Any]], path_of: Any = None) -> Change | None:
    """How a run's ``inputs`` record now (``new``, made with ``old`` as the known digests) differs from the
    one its checkpoint or summary holds (``old``): None when the same, or when ``old`` records nothing this
    code can read (a run stamped before fingerprints is never taken as changed). ``path_of(kind, name)``
    names a file in the message (default ``<kind>/<name>``)."""
    if not isinstance(old, Mapping):
        return None
    path_of = path_of or (lambda kind, name: f"{kind}/{name}")
    changes: list[tuple[str, str]] = []
    for kind in sorted(set(old) | set(new)):
        before, now = read_record(old.get(kind)), read_record(new.get(kind)) or {}
        if before is None:
            continue  # not recorded, or recorded in a form this code does not read: nothing to compare
        for name in sorted(set(before) | set(now)):
            if name not in now:
                changes.append((path_of(kind, name), "read by the run, gone now"))
            elif name not in before:
                changes.append((path_of(kind, name), "not among the files the run read (a file added since)"))
            elif now[name].digest != before[name].digest:
                what = (f"{now[name].size} bytes, {before[name].size} when the run read it" if now[name].size != before[name].size
                        else "other bytes than the run read (same size, new content)")
                changes.append((path_of(kind, name), what))
    return Change(changes[0][0], changes[0][1], len(changes)) if changes else None
