"""The original HierarCaps protocol (docs/method.md §6.5; HierarCaps ``hierarchical_retrieval.py``).

- ``level_order_correlation`` (d_corr): per row, Kendall τ between the radii of its four
  captions and their levels [1, 2, 3, 4]; mean over rows. A more specific caption should lie
  farther from the root.
- ``threshold_retrieval``: for each image and each of ``steps`` radius thresholds (a linspace
  between the pool's smallest and largest radius), take the pool text with the highest
  similarity among those with radius ≤ threshold and append it when it differs from the
  previous pick. Precision = |set(picks) ∩ GT| / max(1, |set(picks)|); recall = ¼ Σ_k
  1[a level-k GT text was picked]; means over images.

Radius and root: Euclidean (CLIP) root r = the L2-normalised embedding of the empty string and
radius ‖e − r‖; Lorentz root = origin and radius d(O, x) (argent's default, not published).
The glue computes the radii; these functions only take them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from scipy.stats import kendalltau
from torch import Tensor

from argent.evaluation.chunked_similarity import ScoreFn
from argent.evaluation.items import item_means

__all__ = ["level_order_correlation", "threshold_retrieval", "threshold_retrieval_per_image"]


def level_order_correlation(radii: np.ndarray | Tensor) -> dict[str, float | int]:
    """Mean Kendall τ between each row's radii and its level order.

    radii: (N, L) radius of each row's level-1..L caption. Rows whose radii are all equal have
    no defined τ (scipy returns NaN); they are left out of the mean and counted.
    """
    radii = np.asarray(radii, dtype=np.float64)
    if radii.ndim != 2 or radii.shape[0] == 0:
        raise ValueError(f"level_order_correlation: expected (N, L) radii, got shape {radii.shape}")
    levels = np.arange(1, radii.shape[1] + 1)
    taus = np.array([kendalltau(row, levels).statistic for row in radii], dtype=np.float64)
    finite = np.isfinite(taus)
    return {
        "kendall_tau": float(taus[finite].mean()) if finite.any() else float("nan"),
        "kendall_tau_rows": int(finite.sum()),
        "kendall_tau_undefined_rows": int((~finite).sum()),
        "level_order_exact_share": float((taus == 1.0).mean()),
    }


def threshold_retrieval(*args: Any, **kwargs: Any) -> dict[str, float]:
    """Radius-threshold retrieval precision and recall: the means over images of
    ``threshold_retrieval_per_image`` (same arguments)."""
    return item_means(threshold_retrieval_per_image(*args, **kwargs))


@torch.no_grad()
def threshold_retrieval_per_image(
    image_emb: Tensor,
    text_emb: Tensor,
    text_radius: Tensor,
    gt_levels: Sequence[Sequence[set[int]]],
    score_fn: ScoreFn,
    steps: int = 50,
    chunk: int = 1024,
) -> dict[str, np.ndarray]:
    """Radius-threshold retrieval precision and recall of every image: {key: (N,) float64}.

    image_emb (N, D); text_emb (T, D) the pool; text_radius (T,); gt_levels[i][k] the set of pool
    indices that are a level-(k+1) ground-truth caption of image i. Memory: one
    (chunk, T) score block.
    """
    n_images, n_texts = image_emb.shape[0], text_emb.shape[0]
    if len(gt_levels) != n_images:
        raise ValueError(f"threshold_retrieval: {len(gt_levels)} ground-truth rows for {n_images} images")
    if n_texts == 0:
        raise ValueError("threshold_retrieval: empty text pool")
    radius = text_radius.detach().to(torch.float64).cpu()
    by_radius = torch.argsort(radius, stable=True)
    sorted_radius = radius[by_radius]
    thresholds = torch.linspace(sorted_radius[0].item(), sorted_radius[-1].item(), steps, dtype=torch.float64)
    # Texts with radius <= threshold are a prefix of the radius order; its last position.
    last = torch.searchsorted(sorted_radius, thresholds, right=True) - 1
    # linspace may round its last value a hair below the true max: still a valid prefix.
    last = last.clamp(min=0)
    text_sorted = text_emb[by_radius.to(text_emb.device)]
    precisions, recalls = [], []
    for s in range(0, n_images, chunk):
        scores = score_fn(image_emb[s : s + chunk], text_sorted).cpu()  # (B, T) in radius order
        # Running argmax over the prefix: the best text among those inside each threshold.
        _, best = _prefix_argmax(scores)
        picks = by_radius[best[:, last]]  # (B, steps) pool indices
        for row, gt in zip(picks.tolist(), gt_levels[s : s + chunk]):
            chosen: list[int] = []
            for t in row:
                if not chosen or chosen[-1] != t:
                    chosen.append(t)
            chosen_set = set(chosen)
            all_gt = set().union(*gt) if gt else set()
            precisions.append(len(chosen_set & all_gt) / max(1, len(chosen_set)))
            recalls.append(sum(bool(level & chosen_set) for level in gt) / max(1, len(gt)))
    return {
        "threshold_precision": np.array(precisions, dtype=np.float64),
        "threshold_recall": np.array(recalls, dtype=np.float64),
    }


def _prefix_argmax(scores: Tensor) -> tuple[Tensor, Tensor]:
    """Per row, the running max over each prefix [0..j] and its index: (B, T) -> 2 × (B, T).

    On an exact tie cummax keeps the later index where the reference's argmax keeps the first;
    ties need two pool texts with identical scores, which the de-duplicated pool makes moot.
    """
    return torch.cummax(scores, dim=1)
