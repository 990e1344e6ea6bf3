"""Evaluate one benchmark: dispatch its entry to the protocol's run, wrap the result JSON.

``evaluate(model, name, entry)`` returns the result dict that ``argent evaluate`` writes as JSON:
metrics, counts (with the skipped items by reason), the resolved entry and its hash,
``partial`` when items were skipped, and ``items``: for every metric that is a mean over test
items, ``{"<metric key>": {"ids": [...], "values": [...]}}`` under the metric's key in
``flatten(metrics, sep="/")``, with mean(values) == metric (checked, ``argent.evaluation.items``).
Where the parts live:

- ``argent.evaluation.encoding``: model to embeddings (images, texts), the per-call reuse of image
  embeddings;
- ``argent.evaluation.protocol_runs``: one ``run_<protocol>`` per protocol (read data, encode,
  call the metrics); ``argent.evaluation.analysis_run``: the embedding analysis;
- the protocol modules (zeroshot, retrieval, pep, hierarcaps_protocol, compositional, analysis):
  the metric arithmetic, which never sees the model.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from argent.data.policy import BadDataPolicy, mark_partial
from argent.evaluation.benchmarks import CommonOptions, entry_hash
from argent.evaluation.items import item_vector
from argent.io import flatten
from argent.models.tokenizer import counting_truncations
from argent.protocols.registry import PROTOCOLS

__all__ = ["evaluate"]

log = logging.getLogger(__name__)

def evaluate(model: Any, name: str, entry: CommonOptions, out_path: str | Path | None = None) -> dict[str, Any]:
    """Run benchmark ``name`` (a validated entry) on ``model``; returns the JSON-ready result.

    ``out_path`` is where the caller will write the JSON; protocols that draw figures (analysis)
    write them beside it (``<stem>_<figure>.png``).
    """
    policy = BadDataPolicy(entry.bad_data)
    protocol = PROTOCOLS[entry.protocol]  # its record: the run function, the units (argent/protocols/registry.py)
    was_training = model.training
    model.eval()
    start = time.perf_counter()
    try:
        with counting_truncations() as cut:
            result = protocol.runner()(model, entry, policy, Path(out_path) if out_path else None)
    finally:
        model.train(was_training)
    counts = result.pop("counts")
    counts["skipped"] = policy.counts
    counts["dropped"] = policy.dropped
    counts["truncated_texts"] = len(cut)  # texts through argent's tokenizer (open_clip models use their own)
    if cut:
        log.warning("%s: %d distinct text(s) longer than the model's context were cut to fit, e.g. %r; raise "
                    "model.<size>.context_length to keep them whole", name, len(cut), min(cut, key=len)[:80])
    metrics = _clean(result.pop("metrics"))
    items = _items(result.pop("items", {}), metrics)
    out = {
        "benchmark": name,
        "protocol": entry.protocol,
        "geometry": model.geometry,
        "status": result.pop("status", "ok"),
        "metrics": metrics,
        "counts": counts,
        "units": protocol.units,
        "entry": dataclasses.asdict(entry),
        "entry_hash": entry_hash(entry),
        "elapsed_s": round(time.perf_counter() - start, 3),
    }
    out.update(_clean(result))
    # computed from fewer items than the input holds (skip mode), or degraded in a way the protocol names
    out = mark_partial(out, policy, name, log, out.pop("degraded", []))
    out["items"] = items  # last: the long vectors after everything a reader looks at
    return out


def _items(raw: dict[str, tuple[list[str], Any]], metrics: dict[str, Any]) -> dict[str, dict[str, list]]:
    """The checked JSON form of a protocol's {metric key: (ids, values)}; the key is the metric's
    key in ``flatten(metrics, sep="/")``, whose value the item values must average to."""
    flat = flatten(metrics, sep="/")
    unknown = sorted(set(raw) - set(flat))
    if unknown:
        raise ValueError(f"item vectors for {unknown}, which are not metrics (metrics: {sorted(flat)})")
    return {key: item_vector(ids, values, flat[key], key) for key, (ids, values) in raw.items()}


def _clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN/inf to None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
