"""Compositional probing on SugarCrepe-format items (docs/method.md §6.6; SugarCrepe ``main_eval.py``).

An item (image I, caption, negative caption) is correct iff σ(I, caption) > σ(I, negative)
**strictly**: a tie counts as wrong. σ is the model's similarity (cosine or −d). Accuracy per
category (the JSON file stem), then argent's group means: replace_* , swap_* , add_* , and the
overall mean over categories (macro); ``item_accuracy`` is the micro mean over all items.
Values are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch import Tensor

__all__ = ["GROUPS", "compositional_metrics"]

GROUPS = ("replace", "swap", "add")


def compositional_metrics(
    positive_scores: np.ndarray | Tensor,
    negative_scores: np.ndarray | Tensor,
    categories: Sequence[str],
) -> dict[str, float | int]:
    """Per-category accuracy, group means and overall means.

    positive_scores (N,) σ(I, caption); negative_scores (N,) σ(I, negative); categories (N,).
    Keys: ``acc_<category>``, ``n_<category>``, ``mean_<group>`` for groups present,
    ``mean`` (macro over categories), ``item_accuracy`` (micro).
    """
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    cats = np.asarray(list(categories))
    if not (pos.shape == neg.shape == cats.shape) or pos.ndim != 1:
        raise ValueError(f"compositional_metrics: shapes differ: {pos.shape}, {neg.shape}, {cats.shape}")
    if pos.size == 0:
        raise ValueError("compositional_metrics: no items")
    correct = pos > neg  # strict: a tie is wrong
    out: dict[str, float | int] = {}
    per_category: dict[str, float] = {}
    for category in sorted(set(cats.tolist())):
        sel = cats == category
        per_category[category] = float(correct[sel].mean())
        out[f"acc_{category}"] = per_category[category]
        out[f"n_{category}"] = int(sel.sum())
    for group in GROUPS:
        members = [v for c, v in per_category.items() if c.split("_", 1)[0] == group]
        if members:
            out[f"mean_{group}"] = float(np.mean(members))
    out["mean"] = float(np.mean(list(per_category.values())))
    out["item_accuracy"] = float(correct.mean())
    return out
