"""Retrieval degree of candidate captions and the PEP negative pool (docs/method.md §6.4).

Candidates: the distinct level-4 captions (first row wins an exact duplicate). degree(t) = the
number of images, other than the images whose own caption is t, whose top-k captions among the
candidates include t (ties in an image's ranking broken by candidate order, i.e. row order).
Pool: the ``size`` lowest-degree captions, ties by row.
"""

from __future__ import annotations

import numpy as np
import polars as pl


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of each row's k largest scores, best first; ties by column index. (N, M) -> (N, min(k, M))."""
    # A stable sort on −score keeps equal scores in column order.
    return np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]


def retrieval_degree(scores: np.ndarray, owner: np.ndarray, k: int) -> np.ndarray:
    """scores (N images, M candidates); owner (N,): the candidate index of image i's own caption.

    Returns degree (M,) int: images j with candidate m in their top k and owner[j] != m.
    """
    if k < 1:
        raise ValueError(f"degree k must be >= 1, got {k}")
    hits = top_k(scores, k)
    not_own = hits != owner[:, None]
    return np.bincount(hits[not_own], minlength=scores.shape[1])


def candidate_captions(captions: list[str]) -> tuple[list[int], np.ndarray]:
    """Distinct captions: (first sample index of each candidate, owner (N,): candidate of each sample)."""
    first: dict[str, int] = {}
    firsts: list[int] = []
    owner = np.empty(len(captions), dtype=np.int64)
    for i, caption in enumerate(captions):
        if caption not in first:
            first[caption] = len(firsts)
            firsts.append(i)
        owner[i] = first[caption]
    return firsts, owner


def degree_table(ids: list[str], rows: list[int], captions: list[str], scores: np.ndarray, k: int) -> pl.DataFrame:
    """Degree of every candidate caption. scores (N, N): image i vs level-4 caption of sample j.

    Duplicate captions are merged into their first sample's column (the columns of later
    duplicates are dropped, so an image never counts the same text twice).
    """
    firsts, owner = candidate_captions(captions)
    degree = retrieval_degree(scores[:, firsts], owner, k)
    return pl.DataFrame({
        "caption": [captions[i] for i in firsts],
        "id": [ids[i] for i in firsts],
        "row": [rows[i] for i in firsts],
        "degree": degree.astype(np.int64),
        "n_samples": np.bincount(owner, minlength=len(firsts)).astype(np.int64),
    })


def negative_pool(degrees: pl.DataFrame, size: int) -> pl.DataFrame:
    """The ``size`` lowest-degree captions, ties by row: columns caption, id, degree."""
    if size < 0:
        raise ValueError(f"pool size must be >= 0, got {size}")
    return degrees.sort(["degree", "row"]).head(size).select("caption", "id", "degree")
