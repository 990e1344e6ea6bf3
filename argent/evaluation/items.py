"""Per-item values beside the item-mean metrics of an evaluation (the result JSON's ``items``).

A metric that is a mean over test items (top-1 as 0/1 per image, TIE per image, R@k per query,
…) is saved with its item vector: ``{"ids": [str, ...], "values": [float, ...]}`` under the
metric's flattened key, so that the tables can split variance into seeds × items and pair item
i of run A with item i of run B by id. The one invariant, checked by ``item_vector`` for every
vector: ``mean(values) == metric`` (relative 1e-9), ids unique, one value per id.

Metrics that are not plain item means get values whose plain mean is the metric:

- a macro mean over S subsets (mean per-class accuracy, SugarCrepe's mean over categories):
  ``macro_item_values`` weighs item i of subset g(i) by N / (S · n_g(i));
- a pooled AUC over pairs that come in clusters (the pairs of one PEP image):
  ``clustered_auc_pseudovalues`` gives one clustered-DeLong pseudo-value per image, built from
  ``auc_placements``' placement values (ties count one half, as in sklearn); their mean is the
  AUC and their variance / C is the clustered DeLong variance, so the tables' item variance is
  the AUC's variance over test images (the negative pool held fixed);
- hits that are not sampled independently (the captions of one retrieval image) are summed per
  sampling unit by ``cluster_item_values``, so that the tables' item variance is over images,
  the unit a test set draws.

Pure functions: no model, no files.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["ItemError", "auc_placements", "cluster_item_values", "clustered_auc_pseudovalues", "item_means",
           "item_vector", "macro_item_values"]

REL_TOL = 1e-9


class ItemError(ValueError):
    """An item vector that does not reproduce its metric (or has bad ids)."""


def item_vector(
    ids: Sequence[str], values: Sequence[float] | np.ndarray, metric_value: float | None, key: str
) -> dict[str, list]:
    """The JSON form ``{"ids": [...], "values": [...]}`` of one metric's item vector, checked.

    ids (N,) unique strings, stable across runs of the same benchmark; values (N,) finite
    numbers whose plain mean equals ``metric_value`` to 1e-9 relative. Integral values are
    written as ints (0/1 hits, tree edges), the rest as full-precision floats. Raises
    ``ItemError`` naming ``key`` when any of this fails.
    """
    ids = [str(i) for i in ids]
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size != len(ids):
        raise ItemError(f"items[{key!r}]: {len(ids)} ids but values of shape {array.shape}")
    if array.size == 0:
        raise ItemError(f"items[{key!r}]: no items")
    if len(set(ids)) != len(ids):
        dupes = sorted(i for i, n in Counter(ids).items() if n > 1)[:5]
        raise ItemError(f"items[{key!r}]: ids are not unique: {dupes}")
    if not np.isfinite(array).all():
        raise ItemError(f"items[{key!r}]: {int((~np.isfinite(array)).sum())} non-finite value(s)")
    if metric_value is None or not math.isfinite(metric_value):
        raise ItemError(f"items[{key!r}]: the metric is {metric_value!r}; a null metric has no item vector")
    mean = float(array.mean())
    if not math.isclose(mean, metric_value, rel_tol=REL_TOL, abs_tol=1e-12):
        raise ItemError(f"items[{key!r}]: mean of {array.size} item values {mean!r} != metric {metric_value!r}")
    integral = np.all(array == np.round(array)) and np.all(np.abs(array) < 2**53)
    out_values = [int(v) for v in array.tolist()] if integral else array.tolist()
    return {"ids": ids, "values": out_values}


def item_means(per_item: Mapping[str, Any]) -> dict[str, float]:
    """{key: mean of its item values}: the metrics of a {key: (N,) values} mapping (arrays,
    tensors or lists; booleans count 0/1)."""
    return {key: float(np.asarray(values, dtype=np.float64).mean()) for key, values in per_item.items()}


def macro_item_values(values: np.ndarray, groups: Sequence[str] | np.ndarray) -> np.ndarray:
    """Item values whose plain mean is the macro mean (the mean over groups of the group means).

    values (N,), groups (N,) the subset of each item. Item i becomes values[i] · N / (S · n_g(i))
    with S groups and n_g(i) items in item i's group: Σ_i over group g gives N/S · mean_g, so
    the plain mean over all N is (1/S) Σ_g mean_g. Equal group sizes leave the values unchanged.
    """
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups)
    if values.shape != groups.shape or values.ndim != 1:
        raise ValueError(f"macro_item_values: shapes {values.shape} and {groups.shape} differ")
    _, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    return values * (values.size / (sizes.size * sizes[inverse]))


def auc_placements(pos_scores: np.ndarray, neg_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong placement values of a pooled ROC AUC (positives should score higher).

    pos_scores (P,), neg_scores (M,). Returns (v_pos (P,), v_neg (M,)): v_pos[i] is the share of
    negatives scored below positive i, v_neg[j] the share of positives scored above negative j,
    each tie counting ½. mean(v_pos) = mean(v_neg) = AUC (the Mann–Whitney statistic, which is
    what sklearn's ``roc_auc_score`` computes), hence also the mean of their concatenation.
    O((P + M) log(P + M)).
    """
    pos = np.asarray(pos_scores, dtype=np.float64)
    neg = np.asarray(neg_scores, dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        raise ValueError(f"auc_placements: needs positives and negatives; got {pos.size} and {neg.size}")
    neg_sorted, pos_sorted = np.sort(neg), np.sort(pos)
    below = np.searchsorted(neg_sorted, pos, side="left")
    tied = np.searchsorted(neg_sorted, pos, side="right") - below
    v_pos = (below + 0.5 * tied) / neg.size
    above = pos.size - np.searchsorted(pos_sorted, neg, side="right")
    tied = np.searchsorted(pos_sorted, neg, side="right") - np.searchsorted(pos_sorted, neg, side="left")
    v_neg = (above + 0.5 * tied) / pos.size
    return v_pos, v_neg


def cluster_item_values(clusters: Sequence[str], values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """One value per cluster (the sampling unit, e.g. the image of several pairs or captions),
    keeping the plain mean: cluster c gets Σ_{i in c} values[i] · C / N (N items, C clusters), so
    the mean over clusters is Σ values / N. clusters (N,), values (N,); returns the cluster ids in
    order of first appearance and their values (C,)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(clusters) != values.size:
        raise ValueError(f"cluster_item_values: {len(clusters)} clusters for values of shape {values.shape}")
    order = list(dict.fromkeys(clusters))
    index = {c: i for i, c in enumerate(order)}
    sums = np.zeros(len(order))
    np.add.at(sums, np.fromiter((index[c] for c in clusters), dtype=np.int64, count=values.size), values)
    return order, sums * (len(order) / values.size)


def clustered_auc_pseudovalues(
    pos_scores: np.ndarray,
    pos_cluster: np.ndarray,
    neg_scores: np.ndarray,
    neg_cluster: np.ndarray,
    clusters: Sequence[str],
) -> tuple[list[str], np.ndarray]:
    """One pseudo-value per cluster (sampling unit) of a pooled ROC AUC: clustered DeLong.

    pos_scores (P,) and neg_scores (M,) are the scores of the positive and negative pairs (positives
    should score higher); pos_cluster (P,) and neg_cluster (M,) are integer positions in
    ``clusters`` (C,), the ids of the units the pairs belong to (a PEP image row). Returns
    (list(clusters), ψ (C,)) with

        ψ_c = AUC + (C/P)·(Σ_{pos i in c} v_pos_i − P_c·AUC) + (C/M)·(Σ_{neg j in c} v_neg_j − M_c·AUC)

    (v_pos, v_neg: ``auc_placements``; P_c, M_c: the cluster's positives and negatives). ψ is
    the linearisation AUC − θ ≈ (1/P) Σ_i (v_pos_i − θ) + (1/M) Σ_j (v_neg_j − θ) summed per
    cluster, so mean(ψ) = AUC exactly and var(ψ, ddof=1) / C is the clustered DeLong variance
    S10/P + S01/M + 2·S11/(P·M) of Obuchowski (1997, Biometrics 53:567–578), which reduces to
    DeLong, DeLong & Clarke-Pearson (1988, Biometrics 44:837–845) for one pair per cluster. An
    image's positives and negatives share the image, so they are summed together: their
    covariance (S11) is part of the variance. A cluster with no pairs gets ψ_c = AUC.

    What the variance covers: new clusters drawn from the same distribution, every other factor
    fixed. In PEP each image is paired with the same fixed pool of negative captions (a second,
    crossed factor): the pool is not resampled, so the variance is the AUC's spread over test
    images for this pool, not over pools. Summing the placements with equal weights instead
    (``cluster_item_values``) keeps the mean but not the variance.
    """
    pos = np.asarray(pos_scores, dtype=np.float64)
    neg = np.asarray(neg_scores, dtype=np.float64)
    pos_c = np.asarray(pos_cluster)
    neg_c = np.asarray(neg_cluster)
    n = len(clusters)
    if pos.ndim != 1 or neg.ndim != 1 or pos_c.shape != pos.shape or neg_c.shape != neg.shape:
        raise ValueError(f"clustered_auc_pseudovalues: scores {pos.shape}, {neg.shape} and clusters "
                         f"{pos_c.shape}, {neg_c.shape} must be 1-D and match")
    for name, index in (("pos_cluster", pos_c), ("neg_cluster", neg_c)):
        if index.size and (not np.issubdtype(index.dtype, np.integer) or index.min() < 0 or index.max() >= n):
            raise ValueError(f"clustered_auc_pseudovalues: {name} must be integer positions in 0..{n - 1}")
    v_pos, v_neg = auc_placements(pos, neg)
    auc = float(v_pos.mean())
    # Per cluster, the centred sums (Σ v − count · AUC) of each class: the cluster's share of
    # the deviation of the two placement means from the AUC.
    pos_dev = np.bincount(pos_c, weights=v_pos - auc, minlength=n)
    neg_dev = np.bincount(neg_c, weights=v_neg - auc, minlength=n)
    return list(clusters), auc + n * (pos_dev / pos.size + neg_dev / neg.size)
