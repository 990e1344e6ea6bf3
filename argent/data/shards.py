"""WebDataset shards: expand a shard pattern (``training_shards``: a run's, one per data stream at least), read raw
samples with their row, write shards atomically.

A raw sample is webdataset's dict: ``__key__``, ``__url__`` and one bytes value per extension
(``jpg``, ``json``, ``txt``, ...), plus ``__row__``, its 0-based position in the shard, so that a bad
sample can be named by file and row. Reading never decodes images.
"""

from __future__ import annotations

import glob
import io
import os
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from braceexpand import braceexpand

from argent.config import DataConfig
from argent.data.policy import BadDataError, BadDataPolicy

RawSample = dict[str, Any]


def expand_shards(pattern: str | Path | Sequence[str | Path]) -> list[Path]:
    """Shard paths for a brace (``shard-{000000..000009}.tar``) and/or glob (``train/*.tar``) pattern.

    A list of patterns is the union. Sorted, de-duplicated. No match is an error, and so is a match that
    is no regular file (a folder named ``shard-1.tar`` among the shards, a FIFO): it was skipped without a
    word before, a smaller data set than the pattern names (``argent check`` refuses it the same way).
    """
    patterns = [pattern] if isinstance(pattern, (str, Path)) else list(pattern)
    if not patterns or not any(str(p).strip() for p in patterns):
        raise BadDataError("no shard pattern given (data.train_shards is empty); point it at the .tar files")
    found: set[Path] = set()
    for pat in patterns:
        for expanded in braceexpand(str(pat)):
            matches = glob.glob(expanded) if glob.has_magic(expanded) else [expanded]
            odd = [m for m in matches if os.path.lexists(m) and not Path(m).is_file()]
            if odd:
                kind = ("a folder" if Path(odd[0]).is_dir() else "a symbolic link to nothing"
                        if not os.path.exists(odd[0]) else "not a regular file (a FIFO, socket or device)")
                raise BadDataError(f"{pat}: {odd[0]} is {kind}, not a shard file; name the .tar files only "
                                   f"(e.g. {odd[0].rstrip('/')}/shard-*.tar for a folder of shards)")
            found.update(Path(m) for m in matches if Path(m).is_file())
    if not found:
        raise BadDataError(f"{patterns}: no shard file matches; check the path (brace or glob pattern of .tar files)")
    return sorted(found)


def _members(path: Path) -> Iterator[dict[str, Any]]:
    from webdataset.tariterators import tar_file_iterator  # imported here: webdataset imports torch

    with open(path, "rb") as stream:
        for member in tar_file_iterator(stream):
            member["__url__"] = str(path)
            yield member


def iter_shard(path: str | Path, policy: BadDataPolicy) -> Iterator[RawSample]:
    """Raw samples of one shard, in file order, each with ``__row__``.

    A truncated or unreadable tar counts as one ``corrupt_shard`` (the samples before the damage are
    kept); a tar cut at a member boundary (no end-of-archive marker) as one ``truncated_shard``; a
    missing shard file is an error.
    """
    from webdataset.tariterators import group_by_keys

    path = Path(path)
    if not path.is_file():
        raise BadDataError(f"{path}: shard file not found")
    row = 0
    try:
        for sample in group_by_keys(_members(path)):
            sample["__row__"] = row
            yield sample
            row += 1
    except (tarfile.TarError, OSError, EOFError, ValueError) as err:
        policy.bad("corrupt_shard", f"{path}: row {row}: unreadable tar ({err})")
        return
    if not has_end_marker(path):
        policy.bad("truncated_shard", f"{path}: ends after row {row - 1} without the tar end-of-archive blocks: "
                                      f"the file was cut short (an interrupted copy or download); copy it again")


def has_end_marker(path: str | Path) -> bool:
    """Whether the tar ends with its end-of-archive marker (two zero blocks after the last member).

    A tar cut exactly at a member boundary reads as a normal end of file; only the missing marker
    tells it apart from a complete one.
    """
    path = Path(path)
    size = path.stat().st_size
    try:
        with tarfile.open(path, "r:") as tar:
            end = 0
            for member in tar:
                end = member.offset_data + -(-member.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
    except tarfile.TarError:
        return False
    if size - end < 2 * tarfile.BLOCKSIZE:
        return False
    with open(path, "rb") as f:
        f.seek(end)
        return f.read(2 * tarfile.BLOCKSIZE) == bytes(2 * tarfile.BLOCKSIZE)


def sample_where(sample: RawSample) -> str:
    """``<shard>: row <n> (key <key>)`` for messages."""
    return f"{sample.get('__url__', '?')}: row {sample.get('__row__', '?')} (key {sample.get('__key__', '?')})"


class ShardWriter:
    """Write one webdataset .tar shard atomically (temp file, then rename) with fixed tar metadata.

    Members are ``<key>.<ext>``, sorted by extension within a sample, in USTAR format with mtime 0
    and fixed owner, so the bytes are a pure function of the samples and a data set's content hash
    is reproducible. (The standard library's tarfile writes it; importing webdataset here would pull
    in torch, which the generator's worker processes do not need.)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        self._tar = tarfile.open(self._tmp, "w", format=tarfile.USTAR_FORMAT)
        self.count = 0

    def write(self, key: str, members: dict[str, bytes]) -> None:
        if not key or "." in key or "/" in key:
            raise ValueError(f"shard key {key!r}: must be non-empty without '.' or '/' (webdataset splits on them)")
        for ext in sorted(members):
            data = members[ext]
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size, info.mtime, info.mode = len(data), 0, 0o444
            info.uname = info.gname = "argent"
            self._tar.addfile(info, io.BytesIO(data))
        self.count += 1

    def close(self) -> None:
        self._tar.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        try:
            self._tar.close()
        finally:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def training_shards(data_cfg: DataConfig, use_boxes: bool, world_size: int, data_streams: int) -> list[Path]:
    """The shard files of ``data.train_shards``, at least one per data stream of every rank, in a format that has
    the boxes the variant uses."""
    if use_boxes and data_cfg.format != "grounded":
        raise BadDataError(f"data.format: {data_cfg.format!r} has no boxes, but the variant uses boxes; use grounded shards")
    shards = expand_shards(data_cfg.train_shards)
    n_streams = world_size * data_streams
    if len(shards) < n_streams:
        raise BadDataError(
            f"{data_cfg.train_shards}: {len(shards)} shard(s) for {world_size} rank(s) × {data_streams} data "
            f"stream(s) (train.data_streams) = {n_streams} streams; every stream needs its own shard. Write more, "
            "smaller shards (e.g. argent synth --shard-size) or use fewer data streams."
        )
    return shards
