"""Image–text retrieval recall (docs/method.md §6.2; HyCoCLIP ``evaluation/retrieval.py``).

R@K in both directions: image→text (a query image is a hit if any of its captions is among its
top K texts) and text→image (a caption is a hit if its image is among its top K images). The
top-K lists come from ``chunked_similarity.streaming_topk``, so a 100k × 100k evaluation never holds the
full score matrix: memory is one ``query_chunk × key_chunk`` block (see ``chunked_similarity``).
Recalls are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from argent.evaluation.chunked_similarity import ScoreFn, streaming_topk
from argent.evaluation.items import item_means

__all__ = ["folded_retrieval_hits", "recall_at_k", "recall_hits", "retrieval_hits", "retrieval_metrics"]


def recall_hits(topk_indices: Tensor, truth: Sequence[set[int]] | Tensor, ks: Sequence[int]) -> dict[int, Tensor]:
    """Per query and k: whether a true item is among its first k retrieved ones.

    topk_indices: (Q, ≥max(ks)) retrieved key ids, best first. truth: per query, a set of true
    key ids, or a (Q,) tensor holding the single true id of each query. Returns {k: (Q,) bool}.
    """
    n_queries = topk_indices.shape[0]
    if n_queries == 0:
        raise ValueError("recall_at_k: no queries")
    if isinstance(truth, Tensor):
        # (Q, k) == (Q, 1): position of the true id in each row, if any.
        match = topk_indices == truth.to(topk_indices.device)[:, None]
    else:
        if len(truth) != n_queries:
            raise ValueError(f"recall_at_k: {len(truth)} truth sets for {n_queries} queries")
        match = torch.tensor(
            [[int(j) in t for j in row] for row, t in zip(topk_indices.tolist(), truth)], dtype=torch.bool
        ).reshape(topk_indices.shape)
    # With fewer keys than k the retrieved list holds every key: slicing past the end is fine.
    return {k: match[:, :k].any(dim=1).cpu() for k in ks}


def recall_at_k(topk_indices: Tensor, truth: Sequence[set[int]] | Tensor, ks: Sequence[int]) -> dict[int, float]:
    """Share of queries with a true item among their first k retrieved ones, for each k (the
    means of ``recall_hits``)."""
    return {k: hits.double().mean().item() for k, hits in recall_hits(topk_indices, truth, ks).items()}


def retrieval_hits(
    image_emb: Tensor,
    text_emb: Tensor,
    caption_image: Sequence[int] | Tensor,
    score_fn: ScoreFn,
    ks: Sequence[int] = (5, 10),
    query_chunk: int = 1024,
    key_chunk: int = 8192,
) -> tuple[dict[str, Tensor], Tensor]:
    """Per-query hits of R@k image→text and text→image.

    image_emb (N_img, D), text_emb (N_txt, D); caption_image[t] is the index of caption t's
    image. Returns ({"i2t_R@5": (Q_img,) bool, "t2i_R@5": (N_txt,) bool, …}, queried): the i2t
    vectors are over the images that have a caption, ``queried`` (Q_img,) their indices; the
    t2i vectors are over every caption, in order. Images without a caption are not queried
    (they stay in the text→image pool).
    """
    caption_image = torch.as_tensor(caption_image, dtype=torch.long)
    if caption_image.shape[0] != text_emb.shape[0]:
        raise ValueError(f"retrieval_metrics: {caption_image.shape[0]} caption links for {text_emb.shape[0]} captions")
    if caption_image.numel() and (caption_image.min() < 0 or caption_image.max() >= image_emb.shape[0]):
        raise ValueError("retrieval_metrics: a caption points at an image index out of range")
    ks = sorted(set(int(k) for k in ks))
    k_max = max(ks)
    # An image without a caption cannot be a hit as a query; it stays in the pool for t2i.
    has_caption = torch.bincount(caption_image, minlength=image_emb.shape[0]) > 0
    if not bool(has_caption.any()):
        raise ValueError("retrieval_metrics: no image has a caption")
    queried = torch.nonzero(has_caption).squeeze(1)
    queries = image_emb if bool(has_caption.all()) else image_emb[queried.to(image_emb.device)]  # no copy if all
    _, i2t = streaming_topk(queries, text_emb, score_fn, k_max, query_chunk, key_chunk)
    _, t2i = streaming_topk(text_emb, image_emb, score_fn, k_max, query_chunk, key_chunk)
    hits: dict[str, Tensor] = {}
    # A retrieved caption is a hit iff its image is the query image: compare image ids, which
    # keeps this step vectorised (Q × k integers) however large the pool.
    for k, value in recall_hits(caption_image[i2t.cpu()], queried, ks).items():
        hits[f"i2t_R@{k}"] = value
    for k, value in recall_hits(t2i.cpu(), caption_image, ks).items():
        hits[f"t2i_R@{k}"] = value
    return hits, queried


def folded_retrieval_hits(
    image_emb: Tensor,
    text_emb: Tensor,
    caption_image: Sequence[int] | Tensor,
    score_fn: ScoreFn,
    fold_size: int,
    **kwargs: Any,
) -> tuple[dict[str, Tensor], Tensor, Tensor]:
    """``retrieval_hits`` within galleries of ``fold_size`` consecutive images (the last fold may be
    smaller; 0 = one gallery): each caption is ranked against its own fold's images only, each image
    against its fold's captions. Returns (hits, queried images, the caption order of the t2i hits):
    hits concatenated over folds, image and caption indices in the caller's numbering."""
    caption_image = torch.as_tensor(caption_image, dtype=torch.long)
    n_images = image_emb.shape[0]
    size = fold_size if fold_size > 0 else max(n_images, 1)
    parts: list[tuple[dict[str, Tensor], Tensor, Tensor]] = []
    for start in range(0, n_images, size):
        stop = min(start + size, n_images)
        captions = torch.nonzero((caption_image >= start) & (caption_image < stop)).squeeze(1)
        if not captions.numel():
            continue  # a fold without captions has no query and no true item
        hits, queried = retrieval_hits(image_emb[start:stop], text_emb[captions], caption_image[captions] - start,
                                       score_fn, **kwargs)
        parts.append((hits, queried + start, captions))
    if not parts:
        raise ValueError("retrieval_metrics: no image has a caption")
    hits = {key: torch.cat([p[0][key] for p in parts]) for key in parts[0][0]}
    return hits, torch.cat([p[1] for p in parts]), torch.cat([p[2] for p in parts])


def retrieval_metrics(*args: Any, **kwargs: Any) -> dict[str, float]:
    """R@k image→text and text→image, {"i2t_R@5": …, "t2i_R@5": …, …}: the means of
    ``retrieval_hits`` (same arguments)."""
    hits, _ = retrieval_hits(*args, **kwargs)
    return item_means(hits)
