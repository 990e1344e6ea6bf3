"""Per-item values of the evaluations, for statistics that cover test-item variance.

``collect_items`` reads the ``items`` of every ``results/eval/<group>/<variant>-<size>/seed<k>/<benchmark>.json``
(written by ``argent evaluate``, see ``argent.evaluation.runner``): per metric key (the key of
``flatten(metrics, sep="/")``) the ids of the test items that entered the metric and one value
each, whose plain mean is the metric. Item ids are stable across runs of one benchmark, so item
``i`` of run A pairs with item ``i`` of run B by id.
"""

from __future__ import annotations

from pathlib import Path

from argent.runs import run_parts
from argent.tables.readers import item_vectors, read_evaluation

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
        data = read_evaluation(path)  # torn, malformed, a FIFO, nested too deep: named (argent.tables.readers)
        for metric, vector in item_vectors(data, path).items():  # finite values whose mean is the metric
            out[(group, variant, size, seed, path.stem, metric)] = vector
    return out
