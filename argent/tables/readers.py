"""The one typed, range-checked reader of every file the tables read back.

- ``read_evaluation``: ``eval/<group>/<variant>-<size>/seed<k>/<benchmark>.json`` (``argent evaluate``);
- ``read_summary``: a run's ``summary.json`` (its data counts and identity hash);
- ``read_run_provenance``: a run's ``provenance.json`` (what it ran on, ``earlier`` segments);
- ``recorded_hash``: the ``config_hash`` a summary or an evaluation carries;
- ``item_vectors``: an evaluation's per-item values (``items``);
- the probe's results and a run's ``metrics.jsonl`` (the mechanism table's diagnostics):
  ``argent/tables/run_readers.py``.

Every file is opened through ``argent.runs.documents.read_document``: a regular file only (a FIFO is
refused before it is opened), UTF-8 JSON nested at most 64 levels. (Job records have their one reader in
``argent/runs/job_records.py``; the step-time record in ``argent/plan/step_record.py``.) Every value a table prints or decides on is checked for its type and
range: a metric is finite and in its kind's range (its protocol's record, ``argent.protocols.registry``), a count a
non-negative integer, a flag a boolean, a hash text. A value that is not is one ``InvalidValue``
naming the file and the key path (``metrics/top1``), never a cell that reads "n/a" or a number.
A null metric is "n/a" only where the evaluation says so: ``status: "n/a"`` (the protocol does not
apply to the model: PEP of a Euclidean model), or a count in the result that says the metric has no
value (``argent.protocols.registry.undefined_by_protocol``); a file without ``status`` (hand-written, or older than
the field) keeps the old reading, null = n/a. With ``status: "ok"`` a null is a metric the evaluator
computed as NaN or infinite (it writes them as null): an error.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from argent.evaluation.items import ItemError, item_vector
from argent.io import ReadError, flatten
from argent.protocols.kinds import COUNT, REAL, Kind
from argent.protocols.registry import PROTOCOLS, metric_kind, required_metrics, undefined_by_protocol
from argent.runs import RunFolder
from argent.runs.documents import read_object

__all__ = ["InvalidValue", "item_vectors", "read_evaluation", "read_run_provenance", "read_summary", "recorded_hash"]

EVAL_FIX = "delete it and re-run the evaluate job that writes it (argent evaluate)"
SUMMARY_FIX = "the run's summary is damaged: delete it and re-run its train job (it resumes from the checkpoint)"
PROVENANCE_FIX = "delete it, or re-train the run (a run without provenance.json reads as 'not recorded')"
STATUSES = ("ok", "n/a")  # what argent.evaluation.runner writes
PROVENANCE_TEXT = ("torch", "cpu_capability", "gpu", "cuda", "blas", "machine", "processor", "python", "hardware_class")
PROVENANCE_FLAGS = ("deterministic_algorithms", "cudnn_deterministic")


class InvalidValue(ReadError):
    """A value of an input file of the wrong type or out of its range; names the file and the key path."""


def _what(value: Any) -> str:
    """What a JSON value is, in a message's words."""
    return {str: "text", list: "list", dict: "object", bool: "boolean", type(None): "null"}.get(type(value), "number")


def check_number(value: Any, kind: Kind, where: str, fix: str) -> float:
    """``value`` as a number of ``kind``, else ``InvalidValue`` naming ``where`` (file: key path)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidValue(f"{where}: {value!r} is not a number (a {_what(value)}); expected {kind.name}; {fix}")
    if not kind.allows(value):
        problem = "is not finite" if not math.isfinite(value) else "is out of range"
        if math.isfinite(value) and kind.integer and not isinstance(value, int):
            problem = "is not an integer"
        raise InvalidValue(f"{where}: {value!r} {problem}; expected {kind.name}; {fix}")
    return value


def _check_type(data: dict[str, Any], key: str, types: tuple[type, ...], what: str, where: str, fix: str) -> None:
    """``data[key]``, when present and not null, is one of ``types`` (a bool is no number here)."""
    value = data.get(key)
    if value is not None and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
        raise InvalidValue(f"{where}: {key}: {value!r} is not {what}; {fix}")


def counts_by_reason(value: Any, where: str, fix: str) -> dict[str, int]:
    """A ``{reason: count}`` object (null or absent: none), every count a non-negative integer."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidValue(f"{where}: expected an object of counts by reason, got a {_what(value)}; {fix}")
    return {str(k): int(check_number(v, COUNT, f"{where}/{k}", fix)) for k, v in value.items()}


def recorded_hash(data: dict[str, Any], path: Path, fix: str) -> str | None:
    """The ``config_hash`` a summary or evaluation carries; None when it carries none (a file argent did
    not write). A number or a list is no hash: an error, not a file that skips the identity check."""
    value = data.get("config_hash")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidValue(f"{path}: config_hash: {value!r} is not a run's identity hash (text); {fix}")
    return value


def _metric(key: str, value: Any, flat: dict[str, Any], data: dict[str, Any], path: Path) -> None:
    """One metric value checked against its kind (a list: each element)."""
    where, kind = f"{path}: metrics/{key}", metric_kind(data.get("protocol"), key)
    if kind is None:  # e.g. a metric replaced by an object: its own key is then missing too
        raise InvalidValue(f"{where}: not a metric protocol {data['protocol']!r} writes; {EVAL_FIX}")
    if value is None:
        if data.get("status") == "ok" and not undefined_by_protocol(data.get("protocol"), key, flat):
            raise InvalidValue(f"{where}: null in an evaluation whose status is 'ok' (the evaluator writes a NaN or "
                               f"infinite result as null: the metric was not computed); {EVAL_FIX}")
        return
    if kind.many != isinstance(value, list):  # a cell's metric as a list would vanish from its table
        raise InvalidValue(f"{where}: {value!r:.80} is not {kind.name}; {EVAL_FIX}")
    for i, element in enumerate(value) if kind.many else [(None, value)]:
        check_number(element, kind, where if i is None else f"{where}[{i}]", EVAL_FIX)


def _check_head(data: dict[str, Any], path: Path) -> None:
    """What the result says about itself: protocol, status, flags, the run it belongs to, its hash."""
    for key in ("variant", "size", "protocol", "benchmark", "partial_reason"):
        _check_type(data, key, (str,), "text", str(path), EVAL_FIX)
    if data.get("protocol") is not None and data["protocol"] not in PROTOCOLS:
        raise InvalidValue(f"{path}: protocol: {data['protocol']!r} is no evaluation protocol; known: "
                           f"{sorted(PROTOCOLS)}; {EVAL_FIX}")
    status = data.get("status")
    if status is not None and status not in STATUSES:
        raise InvalidValue(f"{path}: status: {status!r} is not one of {list(STATUSES)}; {EVAL_FIX}")
    _check_type(data, "partial", (bool,), "true or false", str(path), EVAL_FIX)
    if data.get("seed") is not None:
        check_number(data["seed"], COUNT, f"{path}: seed", EVAL_FIX)
    recorded_hash(data, path, EVAL_FIX)


def read_evaluation(path: Path) -> dict[str, Any]:
    """An evaluation JSON, every value the tables read checked (module doc); returns it as read."""
    data = read_object(path, "an evaluation result (a JSON object)", EVAL_FIX)
    if "metrics" not in data:
        raise InvalidValue(f"{path}: no 'metrics' (not an evaluation result argent wrote); {EVAL_FIX}")
    metrics = data["metrics"]
    if not isinstance(metrics, dict) or not metrics:
        got = "an empty one" if metrics == {} else f"a {_what(metrics)}"
        raise InvalidValue(f"{path}: 'metrics' must be an object of metric values, got {got}; {EVAL_FIX}")
    _check_head(data, path)
    flat = flatten(metrics, sep="/")
    missing = [key for key in required_metrics(data.get("protocol")) if key not in flat]
    if missing:
        raise InvalidValue(f"{path}: metrics: no {missing} (every {data['protocol']} result holds them); {EVAL_FIX}")
    for key, value in flat.items():
        _metric(key, value, flat, data, path)
    counts = data.get("counts")
    if counts is not None:
        if not isinstance(counts, dict):
            raise InvalidValue(f"{path}: 'counts' must be an object, got a {_what(counts)}; {EVAL_FIX}")
        for key, value in counts.items():
            if key in ("skipped", "dropped"):
                counts_by_reason(value, f"{path}: counts/{key}", EVAL_FIX)
            else:
                check_number(value, COUNT, f"{path}: counts/{key}", EVAL_FIX)
    source = data.get("pretrained")
    if source is not None:
        if not isinstance(source, dict):
            raise InvalidValue(f"{path}: pretrained: expected an object, got {source!r:.80}; {EVAL_FIX}")
        for key in ("layout", "arch", "sha256"):
            _check_type(source, key, (str,), "text", f"{path}: pretrained", EVAL_FIX)
    return data


def item_vectors(data: dict[str, Any], path: Path) -> dict[str, dict[str, float]]:
    """``{metric: {item id: value}}`` of an evaluation's ``items``: ids (text) and values lists of one
    length, every value a finite number, and their mean the metric (``argent.evaluation.items.item_vector``)."""
    items = data.get("items") or {}
    if not isinstance(items, dict):
        raise InvalidValue(f"{path}: items: expected an object of item vectors, got a {_what(items)}; {EVAL_FIX}")
    metrics = data.get("metrics")
    flat = flatten(metrics, sep="/") if isinstance(metrics, dict) else {}
    out = {}
    for metric, vector in items.items():
        ids, values = (vector.get("ids"), vector.get("values")) if isinstance(vector, dict) else (None, None)
        if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
            raise ReadError(f"{path}: items[{metric!r}] needs 'ids' and 'values' lists of one length")
        for i, item in enumerate(ids):
            if not isinstance(item, str):  # the evaluator writes every id as text; a number is a damaged file
                raise InvalidValue(f"{path}: items/{metric}/ids[{i}]: {item!r} is not an item id (text); {EVAL_FIX}")
        for i, value in enumerate(values):
            check_number(value, REAL, f"{path}: items/{metric}/values[{i}]", EVAL_FIX)  # pseudo-values: any sign
        if isinstance(flat.get(metric), (int, float)):
            try:
                item_vector(ids, values, flat[metric], metric)  # the evaluator's own check: mean == metric
            except ItemError as err:
                raise InvalidValue(f"{path}: {err}; {EVAL_FIX}") from None
        out[metric] = {i: float(v) for i, v in zip(ids, values)}
    return out


def read_summary(path: Path) -> dict[str, Any]:
    """A run's ``summary.json``: its data counts (``skipped_samples``, ``dropped_samples``: objects of
    non-negative integer counts, absent or null: none) and its ``config_hash`` checked; returned as read."""
    data = read_object(path, "a run summary (a JSON object)", SUMMARY_FIX)
    for key in ("skipped_samples", "dropped_samples"):
        counts_by_reason(data.get(key), f"{path}: {key}", SUMMARY_FIX)
    recorded_hash(data, path, SUMMARY_FIX)
    return data


def _provenance_record(record: Any, where: str) -> None:
    if not isinstance(record, dict):
        raise InvalidValue(f"{where}: expected an object (one training segment's record), got "
                           f"{record!r:.80}; {PROVENANCE_FIX}")
    for key in PROVENANCE_TEXT:
        _check_type(record, key, (str,), "text", where, PROVENANCE_FIX)
    for key in PROVENANCE_FLAGS:
        _check_type(record, key, (bool,), "true or false", where, PROVENANCE_FIX)
    if record.get("threads") is not None:
        check_number(record["threads"], COUNT, f"{where}: threads", PROVENANCE_FIX)


def read_run_provenance(run_dir: Path) -> dict[str, Any] | None:
    """A run's ``provenance.json`` (None for a run trained before runs recorded it), checked: an object
    whose hardware fields are text and whose ``earlier`` is a list of such objects."""
    path = RunFolder(Path(run_dir)).provenance
    if not path.exists():
        return None
    record = read_object(path, "a run's provenance record (a JSON object)", PROVENANCE_FIX)
    _provenance_record(record, str(path))
    earlier = record.get("earlier")
    if earlier is not None:
        if not isinstance(earlier, list):
            raise InvalidValue(f"{path}: earlier: expected a list of the earlier segments' records, got "
                               f"{earlier!r:.80}; {PROVENANCE_FIX}")
        for i, segment in enumerate(earlier):
            _provenance_record(segment, f"{path}: earlier[{i}]")
    return record
