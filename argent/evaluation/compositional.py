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

from argent.evaluation.items import macro_item_values

__all__ = ["GROUPS", "compositional_item_values", "compositional_metrics"]

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
    correct, cats = _correct(positive_scores, negative_scores, categories)
    out: dict[str, float | int] = {}
    per_category: dict[str, float] = {}
    for category in sorted(set(cats.tolist())):
        sel = cats == category
        per_category[category] = float(correct[sel].mean())
        out[f"acc_{category}"] = per_category[category]
        out[f"n_{category}"] = int(sel.sum())
    for group in GROUPS:
        members = [v for c, v in per_category.items() if _group(c) == group]
        if members:
            out[f"mean_{group}"] = float(np.mean(members))
    out["mean"] = float(np.mean(list(per_category.values())))
    out["item_accuracy"] = float(correct.mean())
    return out


def _correct(
    positive_scores: np.ndarray | Tensor, negative_scores: np.ndarray | Tensor, categories: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(correct (N,) bool, categories (N,) str array) after the shape checks."""
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    cats = np.asarray(list(categories))
    if not (pos.shape == neg.shape == cats.shape) or pos.ndim != 1:
        raise ValueError(f"compositional_metrics: shapes differ: {pos.shape}, {neg.shape}, {cats.shape}")
    if pos.size == 0:
        raise ValueError("compositional_metrics: no items")
    return pos > neg, cats  # strict: a tie is wrong


def _group(category: str) -> str:
    return category.split("_", 1)[0]


def compositional_item_values(
    positive_scores: np.ndarray | Tensor,
    negative_scores: np.ndarray | Tensor,
    categories: Sequence[str],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Item vectors of ``compositional_metrics``' accuracy keys: {key: (item indices (n,), values (n,))}.

    Inputs as ``compositional_metrics``. ``acc_<category>`` and ``item_accuracy``: the 0/1
    correctness of the category's / of all items. ``mean_<group>`` and ``mean`` are macro means
    over categories, so item i of category c(i) gets correct_i · n / (S · n_c(i)) with n the
    items and S the categories they cover (``macro_item_values``): the plain mean of these values
    is the mean of the per-category accuracies, i.e. the reported metric.
    """
    correct, cats = _correct(positive_scores, negative_scores, categories)
    correct = correct.astype(np.float64)
    everything = np.arange(correct.size)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for category in sorted(set(cats.tolist())):
        sel = np.flatnonzero(cats == category)
        out[f"acc_{category}"] = (sel, correct[sel])
    groups = np.array([_group(c) for c in cats.tolist()])
    for group in GROUPS:
        sel = np.flatnonzero(groups == group)
        if sel.size:
            out[f"mean_{group}"] = (sel, macro_item_values(correct[sel], cats[sel]))
    out["mean"] = (everything, macro_item_values(correct, cats))
    out["item_accuracy"] = (everything, correct)
    return out
