"""Per-item values of the evaluations, for statistics that cover test-item variance.

``collect_items`` reads the ``items`` of every ``results/eval/<group>/<variant>-<size>/seed<k>/<benchmark>.json``
(written by ``argent evaluate``, see ``argent.evaluation.runner``): per metric key (the key of
``flatten(metrics, sep="/")``) the ids of the test items that entered the metric and one value
each, whose plain mean is the metric. Item ids are stable across runs of one benchmark, so item
``i`` of run A pairs with item ``i`` of run B by id.
"""

from __future__ import annotations

from pathlib import Path

from argent.io import ReadError, read_json
from argent.layout import run_parts

__all__ = ["ItemKey", "collect_items"]

ItemKey = tuple[str, str, str, int, str, str]
"""(group, variant, size, seed, benchmark, metric)."""


def collect_items(eval_dir: Path) -> dict[ItemKey, dict[str, float]]:
    """{(group, variant, size, seed, benchmark, metric): {item id: value}} over every evaluation JSON
    under ``eval_dir`` (results/eval). A JSON without ``items`` (older, or a protocol with no item
    means, or a metric that is null) contributes nothing; a malformed one is an error naming it."""
    out: dict[ItemKey, dict[str, float]] = {}
    for path in sorted(Path(eval_dir).glob("*/*/seed*/*.json")):
        group, variant, size, seed = run_parts(path.parent)
        data = read_json(path)  # a torn or malformed file is an error naming it
        for metric, vector in (data.get("items") or {}).items():
            ids, values = (vector.get("ids"), vector.get("values")) if isinstance(vector, dict) else (None, None)
            if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
                raise ReadError(f"{path}: items[{metric!r}] needs 'ids' and 'values' lists of one length")
            out[(group, variant, size, seed, path.stem, metric)] = {str(i): float(v) for i, v in zip(ids, values)}
    return out
