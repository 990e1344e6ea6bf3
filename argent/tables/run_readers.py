"""Typed, range-checked readers of the run records the probe and mechanism tables read: the probe's result
JSON (``read_probe``) and a run's ``metrics.jsonl`` (``read_diagnostics``), siblings of argent/tables/readers.py.

A file of the wrong shape (the probe's ``[]``, ``{}``, ``{"conditions": 5}``; a condition without a name) is
one ``InvalidValue`` naming the file and the key: the table cannot say what it holds. A value of the right
shape outside its range (a NaN or −7.5 macro-F1, an infinite angle, 1e308) is *marked*: the cell reads
``INVALID`` with the table's footnote naming the file, the key and the value, never a number. A trained
run whose ``metrics.jsonl`` is empty, not a file, or holds no diagnostics is said so in its row, not shown
as "not run". Ranges: fractions (macro-F1, the always-"No" baseline, the collapse share) in [0, 1], a
confidence half-width and a norm in [0, 1e15], a cosine (visual coherence) in [-1, 1], an angle φ in
[0, π], the curvature in (0, 1e15], any other diagnostic finite within ±1e15.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.protocols.kinds import ANGLE, COUNT, FRACTION, LARGEST, NORM, REAL, Kind
from argent.runs.documents import read_object, regular_file
from argent.tables.readers import InvalidValue

__all__ = ["INVALID", "COSINE", "Diagnostics", "ProbeValue", "diagnostic_kind", "read_diagnostics", "read_probe"]

INVALID = "INVALID"  # what a cell says for a value outside its range (the footnote says which and why)
PROBE_FIX = "delete it and re-run the probe job that writes it (argent probe)"
COSINE = Kind("a cosine in [-1, 1]", -1.0, 1.0)
CURVATURE = Kind(f"a curvature in (0, {LARGEST:g}]", 1e-300, LARGEST)
DIAGNOSTIC_KINDS = ((re.compile(r"collapse/.+|contrastive/acc_.+"), FRACTION), (re.compile(r"phi/.+"), ANGLE),
                    (re.compile(r"norm/.+"), NORM), (re.compile(r"curv"), CURVATURE))


def _problem(value: Any, kind: Kind) -> str | None:
    """Why ``value`` is not a ``kind`` (None: it is one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r:.40} is not a number"
    if not math.isfinite(value):
        return f"{value!r} is not finite"
    return None if kind.allows(value) else f"{value!r:.40} is out of range ({kind.name})"


@dataclass(frozen=True)
class ProbeValue:
    """One probe cell: its value, or None with ``problem`` when the file held one outside its range."""

    value: float | None
    problem: str = ""


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidValue(f"{where}: expected an object, got {value!r:.60}; {PROBE_FIX}")
    return value


def _stat(entry: Any, key: str, kind: Kind, where: str) -> ProbeValue:
    """``entry[key]`` (a ``mean_ci`` object's field): null is "n/a", a value outside ``kind`` is marked."""
    if entry is not None and not isinstance(entry, dict):
        raise InvalidValue(f"{where}: expected an object (mean, ci95, n), got {entry!r:.60}; {PROBE_FIX}")
    value = entry.get(key) if entry else None
    if value is None:
        return ProbeValue(None)
    problem = _problem(value, kind)
    return ProbeValue(None, f"{where}/{key}: {problem}") if problem else ProbeValue(float(value))


def read_probe(path: Path) -> list[dict[str, Any]]:
    """The probe result's conditions as the probe table reads them: per condition its name and the
    unseen-hypernym macro-F1 (mean, ci95, n), the always-"No" baseline and the visual coherence, each a
    ``ProbeValue`` (module doc)."""
    data = read_object(path, "a probe result (a JSON object with its conditions)", PROBE_FIX)
    conditions = data.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        raise InvalidValue(f"{path}: conditions: expected a list of the probe's conditions, got "
                           f"{conditions!r:.60}; {PROBE_FIX}")
    out = []
    for i, cond in enumerate(conditions):
        where = f"{path}: conditions[{i}]"
        cond = _object(cond, where)
        if not isinstance(cond.get("name"), str):
            raise InvalidValue(f"{where}/name: {cond.get('name')!r:.60} is not a condition's name; {PROBE_FIX}")
        summary = _object(cond.get("summary", {}), f"{where}/summary")
        test = _object({} if summary.get("test") is None else summary["test"], f"{where}/summary/test")
        unseen = _object({} if test.get("unseen") is None else test["unseen"], f"{where}/summary/test/unseen")
        f1 = unseen.get("category_mean_macro_f1")
        base = unseen.get("category_mean_always_no")
        at = f"{where}/summary/test/unseen"
        n = _stat(f1, "n", COUNT, f"{at}/category_mean_macro_f1")
        out.append({"name": cond["name"],
                    "macro_f1": _stat(f1, "mean", FRACTION, f"{at}/category_mean_macro_f1"),
                    "ci95": _stat(f1, "ci95", Kind(NORM.name, 0.0, LARGEST), f"{at}/category_mean_macro_f1"),
                    "n": n, "always_no": _stat(base, "mean", FRACTION, f"{at}/category_mean_always_no"),
                    "coherence": _stat(cond.get("coherence_mean"), "mean", COSINE, f"{where}/coherence_mean")})
    return out


# ---- metrics.jsonl: the mechanism table's diagnostics -----------------------------------------------


def diagnostic_kind(key: str) -> Kind:
    """The range of a diagnostic (``diag/`` dropped) or of the curvature."""
    return next((kind for pattern, kind in DIAGNOSTIC_KINDS if pattern.fullmatch(key)), REAL)


@dataclass
class Diagnostics:
    """A run's end-of-training diagnostics: the last record that logged any, its checked values (a value
    outside its range is left out and named in ``problems``), and ``note`` when there are none to read."""

    step: int = -1
    values: dict[str, float] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (key, what is wrong, naming file and line)
    note: str = ""


def read_diagnostics(path: Path, prefix: str = "diag/", also: tuple[str, ...] = ("curv",)) -> Diagnostics:
    """The diagnostics of the last record of ``metrics.jsonl`` that carries ``prefix`` keys, plus the keys
    ``also`` of that record. A line that is not a JSON object (text a tool wrote into the file, a torn
    line) is skipped and counted; the file never stops the table (module doc)."""
    if not path.exists():
        return Diagnostics(note=f"no {path.name}")
    try:
        regular_file(path, "")
        lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except (InvalidValue, OSError, ValueError) as err:
        return Diagnostics(note=f"{path.name} unreadable ({str(err).split(';')[0]})")
    found, skipped = None, 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            skipped += 1
            continue
        if any(str(k).startswith(prefix) for k in record):
            found = (number, record)
    note = f"{skipped} line(s) of {path.name} are not JSON records, skipped" if skipped else ""
    if found is None:
        empty = "is empty" if not any(line.strip() for line in lines) else "holds no diagnostics"
        return Diagnostics(note=f"{path.name} {empty}" + (f"; {note}" if note else ""))
    number, record = found
    out = Diagnostics(note=note)
    step = record.get("step")
    out.step = step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else -1
    keys = {k.removeprefix(prefix): v for k, v in record.items() if str(k).startswith(prefix)}
    keys.update({k: record[k] for k in also if k in record})
    for key, value in keys.items():
        problem = _problem(value, diagnostic_kind(key))
        if problem:
            out.problems.append((key, f"{path}: line {number}: {key}: {problem}"))
        else:
            out.values[key] = float(value)
    return out
