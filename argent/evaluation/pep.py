"""PEP: entailment as a detector of an image's own hierarchical captions (docs/method.md §6.4; ARGENT Eq. 9).

Score: p_Ent(p, c) = max(0, 1 − 2φ(p, c)/π) with parent p = caption and child c = image (MERU's
text ⊒ image direction), φ = ``geometry`` exterior angle, computed in float64.

Pairs (argent's defaults; the paper's cleaned set and pool are not public):
- positives: (T_i^k, I_i) for every image i and caption level k = 1..4;
- negatives: (t, I_i) for every pool caption t that is not one of image i's own captions.

Metrics (sklearn ``roc_auc_score`` / ``average_precision_score``, as fractions): AUC and AP
overall and per level (level-k positives against all negatives). The clamp sends every
φ ≥ π/2 to p_Ent = 0, and those ties move AUC/AP; the unclamped ranking (score −φ) is reported
as the diagnostic ``raw_auc`` / ``raw_ap``.

Memory: the pair list is sparse (positives: 4 per image; negatives: pool × images, minus the
chains), so only those pairs are scored. Negatives are computed as ``pool × image_chunk``
blocks of ``pairwise_exterior_angle`` holding at most ``block_entries`` angles (default 2²²,
≈ 32 MiB per float64 temporary, ≈ 0.2 GiB peak); positives as paired angles over
``block_entries // D``-row gathers. What grows with the data is the score vector, which
sklearn needs whole for an exact AUC/AP: 8 bytes per pair to hold, and about 100 bytes per pair
at the peak of ``roc_auc_score`` / ``average_precision_score`` (their sort and cumulative sums).
bench/evaluate.py measures 1k images × a 100-caption pool (104k pairs) at ≈ 20 MiB and 100k
images (10.4M pairs) at ≈ 1.1 GiB; the published setting (522 images × 100) is ≈ 55k pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.metrics import average_precision_score, roc_auc_score
from torch import Tensor

from argent import geometry

__all__ = ["PepPairs", "build_pairs", "entailment_probability", "negative_index", "pair_angles", "pep_metrics"]


@dataclass
class PepPairs:
    """Index form of the PEP pair set over a table of distinct caption texts.

    texts: the distinct captions to embed (chains first, then pool-only captions).
    pos_text, pos_image, pos_level: (P,) positives: caption index, image index, level 1..4.
    pool_text: (M,) caption index of each pool caption.
    excl_pool, excl_image: (E,) (pool position, image) pairs left out of the negatives because
      the pool caption is one of that image's own captions.
    """

    texts: list[str]
    pos_text: Tensor
    pos_image: Tensor
    pos_level: Tensor
    pool_text: Tensor
    excl_pool: Tensor
    excl_image: Tensor

    @property
    def n_images(self) -> int:
        return int(self.pos_image.max().item()) + 1 if self.pos_image.numel() else 0

    @property
    def n_negatives(self) -> int:
        return self.n_images * int(self.pool_text.numel()) - int(self.excl_pool.numel())


def build_pairs(chains: Sequence[Sequence[str]], pool: Sequence[str]) -> PepPairs:
    """Pair set for images 0..N−1 whose own captions are ``chains[i]`` (general → specific).

    ``pool`` is the negative pool (duplicates are dropped, first occurrence kept). A pool
    caption equal to one of image i's captions is not a negative for image i.
    """
    if not chains:
        raise ValueError("PEP: no images (empty chain list)")
    if not pool:
        raise ValueError("PEP: the negative pool is empty")
    index: dict[str, int] = {}

    def idx(text: str) -> int:
        return index.setdefault(text, len(index))

    pos_text, pos_image, pos_level = [], [], []
    for i, chain in enumerate(chains):
        for level, text in enumerate(chain, start=1):
            pos_text.append(idx(text))
            pos_image.append(i)
            pos_level.append(level)
    pool_unique = list(dict.fromkeys(pool))
    pool_text = [idx(t) for t in pool_unique]
    pool_pos = {t: p for p, t in enumerate(pool_unique)}
    excl_pool, excl_image = [], []
    for i, chain in enumerate(chains):
        for p in sorted({pool_pos[t] for t in chain if t in pool_pos}):
            excl_pool.append(p)
            excl_image.append(i)
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
    return PepPairs(
        texts=list(index),
        pos_text=as_long(pos_text),
        pos_image=as_long(pos_image),
        pos_level=as_long(pos_level),
        pool_text=as_long(pool_text),
        excl_pool=as_long(excl_pool),
        excl_image=as_long(excl_image),
    )


def entailment_probability(phi: np.ndarray | Tensor) -> np.ndarray:
    """p_Ent = max(0, 1 − 2φ/π) (published); φ ≥ π/2 (outside the half-space) scores 0."""
    phi = np.asarray(phi, dtype=np.float64)
    return np.maximum(0.0, 1.0 - 2.0 * phi / math.pi)


@torch.no_grad()
def pair_angles(
    text_emb: Tensor,
    image_emb: Tensor,
    pairs: PepPairs,
    curv: float | Tensor,
    block_entries: int = 1 << 22,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exterior angles φ(caption, image) of every PEP pair, in float64.

    text_emb (T, D) rows aligned with ``pairs.texts``; image_emb (N, D). Returns
    (phi_pos (P,), level_pos (P,), phi_neg (pairs.n_negatives,)). Positives are in
    ``pairs.pos_*`` order; negatives image-major (image 0 with every pool caption that is not its
    own, in pool order, then image 1, …), the order of ``negative_index``, whatever the blocking.
    """
    text_emb = text_emb.to(torch.float64)
    image_emb = image_emb.to(torch.float64)
    curv = float(curv)
    dim = max(1, text_emb.shape[1])
    # Positives: paired angles over gathered rows, a bounded number of rows at a time.
    rows = max(1, block_entries // dim)
    phi_pos = [
        geometry.exterior_angle(
            text_emb[pairs.pos_text[s : s + rows]], image_emb[pairs.pos_image[s : s + rows]], curv
        )
        for s in range(0, pairs.pos_text.numel(), rows)
    ]
    # Negatives: pool × image-chunk blocks, with each image's own captions masked out.
    pool_emb = text_emb[pairs.pool_text]
    n_pool, n_images = pool_emb.shape[0], image_emb.shape[0]
    chunk = max(1, block_entries // max(1, n_pool))
    order = torch.argsort(pairs.excl_image, stable=True)
    excl_image, excl_pool = pairs.excl_image[order], pairs.excl_pool[order]
    phi_neg = []
    for i0 in range(0, n_images, chunk):
        i1 = min(n_images, i0 + chunk)
        block = geometry.pairwise_exterior_angle(pool_emb, image_emb[i0:i1], curv)  # (M, B)
        keep = torch.ones_like(block, dtype=torch.bool)
        lo, hi = torch.searchsorted(excl_image, torch.tensor([i0, i1])).tolist()
        keep[excl_pool[lo:hi], excl_image[lo:hi] - i0] = False
        phi_neg.append(block.T[keep.T])  # (B, M) row-major: image-major, pool order within an image
    cat = lambda xs: torch.cat(xs).numpy() if xs else np.empty(0)  # noqa: E731
    return cat(phi_pos), pairs.pos_level.numpy().copy(), cat(phi_neg)


def negative_index(pairs: PepPairs, n_images: int) -> tuple[np.ndarray, np.ndarray]:
    """(image (Nn,), pool position (Nn,)) of every negative, in ``pair_angles``' order (image-major,
    pool order within an image, each image's own captions left out)."""
    keep = np.ones((n_images, int(pairs.pool_text.numel())), dtype=bool)
    keep[pairs.excl_image.numpy(), pairs.excl_pool.numpy()] = False
    image, pool = np.nonzero(keep)
    return image, pool


def _auc_ap(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    labels = np.concatenate([np.ones(len(pos), dtype=bool), np.zeros(len(neg), dtype=bool)])
    scores = np.concatenate([pos, neg])
    return float(roc_auc_score(labels, scores)), float(average_precision_score(labels, scores))


def tied_comparison_share(pos: np.ndarray, neg: np.ndarray) -> float:
    """The share of the P·M positive–negative comparisons an AUC averages whose two scores are equal.

    AUC = (1 − τ)·AUC_untied + τ/2: each tie is half a win whatever the model, so with τ near 1 the
    AUC counts how many pairs leave the tie (here, positives inside the half-space φ < π/2), not how
    the score ranks them (docs/statistics.md, "What a metric can rank")."""
    values, pos_counts = np.unique(pos, return_counts=True)
    at = np.searchsorted(values, neg)
    inside = at < len(values)
    hits = np.zeros(len(neg), dtype=bool)
    hits[inside] = values[at[inside]] == neg[inside]
    neg_counts = np.bincount(at[hits], minlength=len(values))
    return float((pos_counts * neg_counts[: len(values)]).sum() / (len(pos) * len(neg)))


def pep_metrics(phi_pos: np.ndarray, level_pos: np.ndarray, phi_neg: np.ndarray) -> dict[str, float | int]:
    """AUC-ROC and AP of p_Ent overall and per level; raw (−φ) AUC/AP as a diagnostic; what the clamp ties.

    phi_pos (P,) and level_pos (P,) for the positives, phi_neg (N,) for the negatives. Beside the
    published scores, the numbers that say whether the clamped score can rank at all (the protocol
    card of a claims row, argent/tables/protocol_card.py): the share of positive–negative
    comparisons tied (``tied_share``; per level ``tied_share_L<k>``), the share of positives inside
    the half-space φ < π/2, where p_Ent > 0 (``inside_share``, ``inside_share_L<k>``), the share of
    negatives there (``inside_share_negative``) and the unclamped ranking per level (``raw_auc_L<k>``).
    """
    phi_pos = np.asarray(phi_pos, dtype=np.float64)
    phi_neg = np.asarray(phi_neg, dtype=np.float64)
    level_pos = np.asarray(level_pos)
    if phi_pos.size == 0 or phi_neg.size == 0:
        raise ValueError(f"PEP needs positives and negatives; got {phi_pos.size} and {phi_neg.size}")
    p_pos, p_neg = entailment_probability(phi_pos), entailment_probability(phi_neg)
    out: dict[str, float | int] = {}
    out["auc"], out["ap"] = _auc_ap(p_pos, p_neg)
    for level in sorted(set(level_pos.tolist())):
        sel = level_pos == level
        out[f"auc_L{level}"], out[f"ap_L{level}"] = _auc_ap(p_pos[sel], p_neg)
    out["raw_auc"], out["raw_ap"] = _auc_ap(-phi_pos, -phi_neg)
    for level in sorted(set(level_pos.tolist())):
        sel = level_pos == level
        out[f"raw_auc_L{level}"], _ = _auc_ap(-phi_pos[sel], -phi_neg)
        out[f"inside_share_L{level}"] = float((p_pos[sel] > 0).mean())
        out[f"tied_share_L{level}"] = tied_comparison_share(p_pos[sel], p_neg)
    out["n_positive"] = int(phi_pos.size)
    out["n_negative"] = int(phi_neg.size)
    out["mean_phi_positive"] = float(phi_pos.mean())
    out["mean_phi_negative"] = float(phi_neg.mean())
    # Share of pairs scored exactly 0 by the clamp: how much of the ranking is ties.
    out["zero_score_share"] = float((np.concatenate([p_pos, p_neg]) == 0).mean())
    out["inside_share"] = float((p_pos > 0).mean())
    out["inside_share_negative"] = float((p_neg > 0).mean())
    out["tied_share"] = tied_comparison_share(p_pos, p_neg)
    return out
