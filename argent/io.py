"""Atomic file writes, file digests and small dict helpers shared by every stage.

A reader (or a job killed mid-write) sees the old file or the new one, never half of one: the
content goes to a temporary file in the same folder, which is then renamed over the target.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator


class ArgentError(Exception):
    """An expected failure (bad input, missing file, damaged run): its message names the file, row or
    config key, says what is wrong and what to do. ``argent`` prints it without a traceback, exit 2."""


class ReadError(ArgentError, ValueError):
    """A file could not be read as what it should be (torn, malformed)."""


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``, else delete it.

    For writers that want a file name (torch.save, polars, matplotlib): ``with atomic_output(p) as
    tmp: df.write_csv(tmp)``. The temporary name keeps the suffix, so format-sniffing writers work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates 0600; give the result the permissions an ordinary open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_text_if_changed(path: str | Path, text: str) -> bool:
    """Write ``text`` atomically unless the file already holds it (its timestamp then stays, so a
    tool that compares timestamps sees no change). Returns whether it wrote."""
    path = Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(path, text)
    return True


def atomic_write_json(path: str | Path, data: Any, indent: int = 2) -> None:
    """Indented JSON; NaN and infinities are refused (they are not JSON)."""
    atomic_write_text(path, json.dumps(data, indent=indent, allow_nan=False) + "\n")


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json(path: str | Path) -> Any:
    """A JSON file's content; a missing, torn or malformed file is a ``ReadError`` naming it. Readers
    that aggregate many files call this for all of them before writing anything."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ReadError(f"{path}: file not found") from None
    except UnicodeDecodeError as err:
        raise ReadError(f"{path}: not UTF-8 text ({err}); delete it and re-run the job that writes it") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReadError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); "
                        f"delete it and re-run the job that writes it") from None


def read_json_object(path: str | Path, what: str = "a JSON object") -> dict[str, Any]:
    """``read_json`` of a file that must hold an object (a run summary, an evaluation result): a list,
    a number or a string at the top is a ``ReadError`` naming the file and what it holds."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ReadError(f"{path}: expected {what}, got a JSON {_json_kind(data)}; delete it and re-run the "
                        f"job that writes it")
    return data


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def flatten(d: dict[str, Any], sep: str = ".", prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1} (``sep`` between the levels)."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, sep, name))
        else:
            out[name] = value
    return out


@contextlib.contextmanager
def exclusive_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if absent) for the block: serialises
    processes that share a folder (a SQLite store's set-up, a study's find-or-create)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def refuse_foreign(folder: str | Path, marker: str, made_by: str) -> None:
    """A stage replaces only a folder it made (``marker`` inside says so): an existing non-empty
    folder without it (the user's data, another tool's output) is an error naming it."""
    folder = Path(folder)
    if folder.is_dir() and any(folder.iterdir()) and not (folder / marker).is_file():
        raise ArgentError(f"{folder}: exists, is not empty and was not made by {made_by} (no {marker} in it); "
                          f"it is not replaced: point the output elsewhere, or move the folder away")
