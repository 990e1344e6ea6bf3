"""The one door for a JSON document argent wrote and reads back (evaluation results, run summaries,
provenance, the probe's results, the step-time record), before any value in it is typed.

``read_document`` refuses, each as one ``ReadError`` naming the file and what to do:

- anything that is not a regular file, checked with ``stat`` before the file is opened: a FIFO in
  place of an evaluation JSON made ``argent tables`` wait for ever; a folder, a socket, a device;
- a file larger than ``MAX_BYTES`` (no document argent writes comes near it);
- text that is not UTF-8, or not JSON;
- nesting deeper than ``MAX_DEPTH`` (an evaluation JSON nested 100,000 brackets deep was a
  ``RecursionError`` traceback; argent's documents nest five levels at most).

What the values mean is each reader's own check (argent/tables/readers.py and its siblings,
argent/plan/step_record.py). Torch-free.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from argent.io import ReadError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "depth", "read_document", "read_object", "regular_file"]

MAX_DEPTH = 64
MAX_BYTES = 2**30  # 1 GiB


def regular_file(path: Path, fix: str) -> os.stat_result:
    """``stat`` of ``path`` when it is a regular file (a symbolic link to one is followed); else a
    ``ReadError`` naming what it is, before anything opens it (a FIFO would block the open)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ReadError(f"{path}: file not found; {fix}") from None
    except OSError as err:
        raise ReadError(f"{path}: cannot be read ({err.strerror or err}); {fix}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device")
        raise ReadError(f"{path}: {kind}, not a regular file; {fix}")
    return info


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value`` nests (a scalar: 0), counted without recursion, up to ``limit`` + 1."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            level += 1
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend((child, level) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def read_document(path: str | Path, fix: str = "delete it and re-run the job that writes it") -> Any:
    """The JSON value of the regular file ``path`` (module doc), every refusal a ``ReadError``."""
    path = Path(path)
    info = regular_file(path, fix)
    if info.st_size > MAX_BYTES:
        raise ReadError(f"{path}: {info.st_size:,} bytes, more than any document argent writes "
                        f"({MAX_BYTES:,}); {fix}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ReadError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); {fix}") from None
    except OSError as err:
        raise ReadError(f"{path}: cannot be read ({err.strerror or err}); {fix}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReadError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); {fix}") from None
    except RecursionError:
        raise ReadError(f"{path}: nested deeper than Python's parser goes (more than {MAX_DEPTH} levels is "
                        f"no document argent writes); {fix}") from None
    if depth(value) > MAX_DEPTH:
        raise ReadError(f"{path}: nested more than {MAX_DEPTH} levels deep (argent's documents nest five at most); "
                        f"{fix}")
    return value


def read_object(path: str | Path, what: str, fix: str = "delete it and re-run the job that writes it") -> dict[str, Any]:
    """``read_document`` of a file that must hold a JSON object."""
    value = read_document(path, fix)
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
        raise ReadError(f"{path}: expected {what}, got a JSON {kind}; {fix}")
    return value
