"""Atomic file writes, file digests, lock files and small dict helpers shared by every stage.

A reader (or a job killed mid-write) sees the old file or the new one, never half of one: the
content goes to a temporary file in the same folder, which is then renamed over the target. A
write the file system refuses (full, over a size limit or a quota, read-only, not permitted) is
one ``WriteRefused`` naming the file and what to do. Lock files are opened without following a
symbolic link and without truncation; a ``HeldLock`` names its holder in the file (a run folder's
writer, argent.runs.hold_writer; the one Snakemake of a results folder, ``hold_workflow``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import socket
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

log = logging.getLogger("argent.io")


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
        os.close(fd)
    except OSError as err:
        refused = _refused(path, err)
        if refused is None:
            raise
        raise refused from err
    try:
        yield Path(tmp)
        # mkstemp creates 0600; give the result the permissions an ordinary open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        refused = _refused(path, err)
        if refused is None:
            raise
        raise refused from err


# What to do when the file system refuses a write, by errno; the message names the file first.
REFUSALS: dict[int, str] = {
    errno.ENOSPC: "no space left on the device; free space there (or point results:/--out elsewhere) and re-run",
    errno.EDQUOT: "disk quota exceeded; free space within the quota (or write elsewhere) and re-run",
    errno.EFBIG: "file too large for this process or file system (a `ulimit -f` limit, or the file system's "
                 "largest file); raise the limit (`ulimit -f unlimited`) or write to another file system, and re-run",
    errno.EROFS: "the file system is read-only; write the output to a writable folder (results:, --out) and re-run",
    errno.EACCES: "permission denied; make the folder writable for this user, or write to another folder, and re-run",
    errno.EPERM: "operation not permitted; make the folder writable for this user, or write to another folder, "
                 "and re-run",
}


class WriteRefused(ArgentError, OSError):
    """The file system refused a write through this module (``REFUSALS``): one message naming the
    file and the fix. Still an ``OSError`` (with the errno and the target as its filename), so
    callers that handle a refused write as one keep doing so."""

    def __str__(self) -> str:
        return str(self.args[0])  # OSError's own str() would rebuild "[Errno N] ..." from the fields


def _refused(path: Path, err: BaseException) -> WriteRefused | None:
    """``err`` as a ``WriteRefused`` naming ``path`` when an OSError of a refusal is behind it (torch's
    writer wraps the OS's error in its own RuntimeError); None for anything else."""
    cause = os_error_in(err)
    code = _errno_of(cause)
    if isinstance(err, WriteRefused) or code not in REFUSALS:
        return None
    at = f" (at {cause.filename})" if cause.filename and str(cause.filename) != str(path) else ""
    refused = WriteRefused(f"{path}: {REFUSALS[code]}{at}; nothing was written there (an earlier "
                           f"version of the file, if any, is unchanged)")
    refused.errno, refused.strerror, refused.filename = code, os.strerror(code), str(path)
    return refused


def _errno_of(err: OSError | None) -> int | None:
    """The OS error number; polars (Rust) raises ``OSError("File too large (os error 27)")`` with none set."""
    if err is None or err.errno is not None:
        return err and err.errno
    found = re.search(r"\(os error (\d+)\)", str(err))
    return int(found.group(1)) if found else None


def os_error_in(err: BaseException | None) -> OSError | None:
    """The first OSError in ``err``'s chain of causes and contexts, if any."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


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
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def open_lock_file(path: str | Path) -> int:
    """A file descriptor of the lock file ``path``, created if absent, never truncated, never followed.

    A lock file's record is rewritten in place: were it a symbolic link, the target (another run's
    checkpoint.pt) would be emptied, and a dangling one would create its target wherever it points;
    a hard link would empty the file's other name. Each is refused with one message naming it."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        raise ArgentError(f"{path}: the lock file is a symbolic link (to {os.readlink(path)}); refused, not "
                          f"followed (writing it would change the file it points to). Delete the link and "
                          f"run again") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(info.st_mode) else f"a hard link ({info.st_nlink} names)"
        raise ArgentError(f"{path}: the lock file is {what}; refused (writing it would change another file). "
                          f"Delete it and run again")
    return fd


def refuse_foreign(folder: str | Path, marker: str, made_by: str) -> None:
    """A stage replaces only a folder it made (``marker`` inside says so): an existing non-empty
    folder without it (the user's data, another tool's output) is an error naming it."""
    folder = Path(folder)
    if folder.is_dir() and any(folder.iterdir()) and not (folder / marker).is_file():
        raise ArgentError(f"{folder}: exists, is not empty and was not made by {made_by} (no {marker} in it); "
                          f"it is not replaced: point the output elsewhere, or move the folder away")


# ---- held locks that name their holder -------------------------------------------------------


class HeldLock:
    """An exclusive, non-blocking ``flock`` on a lock file whose text names the holder (pid, host,
    start time, what) while it is held and is emptied on release. The flock is the lock (the kernel
    drops it with its process); the text is for the message of whoever finds it taken."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd: int | None = open_lock_file(self.path)

    def try_lock(self) -> bool:
        """Take the lock if free; False when another open file holds it."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            self.close()
            raise ArgentError(f"{self.path}: cannot lock it ({err.strerror}); a file system without flock? Use a "
                              f"folder on a local or lock-capable one") from None

    def record(self) -> dict[str, str]:
        """The holder's record as the file says (empty: nobody, or a holder just starting)."""
        try:
            text = os.pread(self.fd, 4096, 0).decode(errors="replace")
        except OSError:
            return {}
        return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)

    def write_record(self, what: str) -> None:
        self._rewrite(f"pid {os.getpid()}\nhost {socket.gethostname()}\n"
                      f"since {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\nwhat {what}\n")

    def release(self) -> None:
        """Empty the record (the file names no holder), unlock, close; idempotent."""
        if self.fd is not None:
            self._rewrite("")
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _rewrite(self, text: str) -> None:
        """A full disk does not stop the holder here (the record is informative); its writes will say so."""
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text.encode(), 0)
        except OSError as err:
            log.warning("%s: cannot record the holder (%s); the lock is held all the same", self.path, err.strerror)


def describe_holder(record: dict[str, str]) -> str:
    """``argent train, pid 123 on host, since <time>`` from a lock file's record."""
    if "pid" not in record:
        return "a process that is just starting (its lock record is not written yet)"
    return (f"{record.get('what', 'a process')}, pid {record['pid']} on {record.get('host', '?')}, "
            f"since {record.get('since', '?')}")
