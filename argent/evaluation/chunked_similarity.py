"""Chunked similarity scoring with bounded memory.

Similarity matrices over large pools (COCO: 5k × 25k; the bench: 100k × 100k) are never built
whole. Every function here walks the pool in blocks and keeps only what the metric needs:

- ``streaming_topk``: the k best keys per query. Working memory is one score block of
  ``query_chunk × key_chunk`` entries plus the running top-k (``query_chunk × 2k``), i.e.
  about ``c · query_chunk · key_chunk · b`` bytes, with b = 4 (float32, as ``model.similarity``
  computes) or 8 (float64) and c ≈ 4 temporaries of the score function (Lorentz: inner
  product, clamp, arcosh). With the defaults (1024 × 8192, float32) that is ≈ 32 MiB per
  temporary; bench/evaluate.py measures a peak of ≈ 110 MiB for 10k × 10k and ≈ 140 MiB for
  100k × 100k (the extra 30 MiB is the O(N·k) top-k lists), i.e. memory set by the chunk
  sizes, not by the number of pairs.
- ``paired_scores``: σ(x_i, y_i) for aligned rows, via the diagonal of ``chunk × chunk`` blocks
  of the pairwise score function (the pairwise similarity itself, no second formula).

A score function maps (B1, D), (B2, D) -> (B1, B2), larger = more similar: ``model.similarity``
(cosine or −Lorentz distance), or ``cosine_similarity`` / ``lorentz_similarity`` below.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from argent import geometry

__all__ = [
    "ScoreFn",
    "cosine_similarity",
    "lorentz_similarity",
    "similarity_for",
    "streaming_topk",
    "paired_scores",
]

ScoreFn = Callable[[Tensor, Tensor], Tensor]


def cosine_similarity(x: Tensor, y: Tensor) -> Tensor:
    """Cosine similarity of L2-normalised rows: (B1, D), (B2, D) -> (B1, B2)."""
    return x @ y.T


def lorentz_similarity(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Negative geodesic distance on the hyperboloid: (B1, D), (B2, D) -> (B1, B2)."""
    return -geometry.pairwise_dist(x, y, curv)


def similarity_for(geometry_name: str, curv: float | Tensor = 1.0) -> ScoreFn:
    """The pure score function matching a model of ``geometry_name`` (same as ``model.similarity``)."""
    if geometry_name == "euclidean":
        return cosine_similarity
    if geometry_name == "lorentz":
        return partial(lorentz_similarity, curv=curv)
    raise ValueError(f"geometry: {geometry_name!r} unknown; expected 'euclidean' or 'lorentz'")


@torch.no_grad()
def streaming_topk(
    queries: Tensor,
    keys: Tensor,
    score_fn: ScoreFn,
    k: int,
    query_chunk: int = 1024,
    key_chunk: int = 8192,
) -> tuple[Tensor, Tensor]:
    """The ``k`` highest-scoring keys for every query, without the full (Q, K) matrix.

    queries (Q, D), keys (K, D) -> values (Q, k'), indices (Q, k') with k' = min(k, K), sorted
    by decreasing score. Memory: see the module docstring (one ``query_chunk × key_chunk``
    block at a time). Exact ties between keys at the k-th place are broken arbitrarily, as in
    ``torch.topk`` on the whole matrix.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    n_keys = keys.shape[0]
    k = min(k, n_keys)
    all_values, all_indices = [], []
    for q0 in range(0, queries.shape[0], query_chunk):
        q = queries[q0 : q0 + query_chunk]
        best_v = torch.full((q.shape[0], 0), float("-inf"), dtype=queries.dtype, device=queries.device)
        best_i = torch.zeros((q.shape[0], 0), dtype=torch.long, device=queries.device)
        for k0 in range(0, n_keys, key_chunk):
            block = score_fn(q, keys[k0 : k0 + key_chunk])
            v, i = block.topk(min(k, block.shape[1]), dim=1)
            # Merge the block's best with the running best (at most 2k candidates per query).
            cand_v = torch.cat([best_v, v], dim=1)
            cand_i = torch.cat([best_i, i + k0], dim=1)
            top_v, pos = cand_v.topk(min(k, cand_v.shape[1]), dim=1)
            best_v, best_i = top_v, cand_i.gather(1, pos)
            del block
        all_values.append(best_v)
        all_indices.append(best_i)
    return torch.cat(all_values), torch.cat(all_indices)


@torch.no_grad()
def paired_scores(x: Tensor, y: Tensor, score_fn: ScoreFn, chunk: int = 512) -> Tensor:
    """σ(x_i, y_i) for aligned rows: (N, D), (N, D) -> (N,).

    Takes the diagonal of ``chunk × chunk`` pairwise blocks so the value comes from the very
    pairwise score function (e.g. ``model.similarity``), not a second formula; memory ``chunk²``.
    """
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"paired_scores: {x.shape[0]} rows vs {y.shape[0]} rows")
    out = [score_fn(x[i : i + chunk], y[i : i + chunk]).diagonal() for i in range(0, x.shape[0], chunk)]
    return torch.cat(out) if out else torch.empty(0, dtype=x.dtype, device=x.device)
