"""WordNet hierarchy metrics on classification predictions (docs/method.md §6.3; HyCoCLIP's evaluator).

For a true class y and a prediction ŷ (both leaves of the taxonomy), with A(·) the ancestor set
(root included, leaf excluded, ``Taxonomy.ancestors``):

- TIE      = tree path length between ŷ and y (0 if correct, 2 for siblings);
- LCA      = |A(ŷ)| − |A(ŷ) ∩ A(y)| + 1 (1 if correct; also 1 for siblings);
- Jaccard  = |A(ŷ) ∩ A(y)| / |A(ŷ) ∪ A(y)|;
- hier. precision = |A(ŷ) ∩ A(y)| / |A(ŷ)|, hier. recall = |A(ŷ) ∩ A(y)| / |A(y)|.

Each is averaged over the evaluated items. Values are returned as plain fractions (Jaccard is
not ×100; ARGENT's tables multiply it by 100).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from argent.data.taxonomy import Taxonomy
from argent.evaluation.items import item_means

__all__ = ["HIERARCHY_METRICS", "pair_metrics", "hierarchy_item_values", "hierarchy_metrics"]

HIERARCHY_METRICS = ("tie", "lca", "jaccard", "hier_precision", "hier_recall")


def pair_metrics(taxonomy: Taxonomy, truth: str, pred: str) -> dict[str, float]:
    """The five metrics for one (truth, prediction) pair of taxonomy node ids."""
    a_true = set(taxonomy.ancestors(truth))
    a_pred = set(taxonomy.ancestors(pred))
    common = len(a_true & a_pred)
    union = len(a_true | a_pred)
    # Only the root has an empty ancestor set (a class that is the root itself is degenerate);
    # the guards give 1.0 there instead of 0/0: there is nothing to disagree on.
    return {
        "tie": float(taxonomy.path_length(truth, pred)),
        "lca": float(len(a_pred) - common + 1),
        "jaccard": common / union if union else 1.0,
        "hier_precision": common / len(a_pred) if a_pred else 1.0,
        "hier_recall": common / len(a_true) if a_true else 1.0,
    }


def hierarchy_item_values(taxonomy: Taxonomy, truths: Sequence[str], preds: Sequence[str]) -> dict[str, np.ndarray]:
    """``pair_metrics`` of every item: {metric: (N,) float64}, aligned with truth/prediction lists.

    Each distinct (truth, pred) pair is scored once (50k ImageNet predictions hold at most
    1000² distinct pairs, usually far fewer).
    """
    if len(truths) != len(preds):
        raise ValueError(f"hierarchy_metrics: {len(truths)} truths but {len(preds)} predictions")
    if not truths:
        raise ValueError("hierarchy_metrics: no predictions to score")
    for node in set(truths) | set(preds):
        if node not in taxonomy:
            raise KeyError(f"class id {node!r} is not a node of the taxonomy (root {taxonomy.root})")
    scored = {pair: pair_metrics(taxonomy, *pair) for pair in set(zip(truths, preds))}
    return {name: np.array([scored[pair][name] for pair in zip(truths, preds)], dtype=np.float64)
            for name in HIERARCHY_METRICS}


def hierarchy_metrics(taxonomy: Taxonomy, truths: Sequence[str], preds: Sequence[str]) -> dict[str, float]:
    """Means of ``pair_metrics`` over aligned truth/prediction id lists (of ``hierarchy_item_values``)."""
    return item_means(hierarchy_item_values(taxonomy, truths, preds))
