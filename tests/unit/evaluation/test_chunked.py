"""Chunked scoring gives the same metrics as the whole matrix (retrieval, PEP, HierarCaps)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argent import geometry
from argent.evaluation.chunked_similarity import paired_scores, similarity_for, streaming_topk
from argent.evaluation.hierarcaps_protocol import threshold_retrieval
from argent.evaluation.pep import build_pairs, pair_angles, pep_metrics
from argent.evaluation.retrieval import retrieval_metrics


def _lorentz_points(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return geometry.exp_map0(torch.randn(n, d, generator=g, dtype=torch.float64) * 0.7, 1.0)


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


@pytest.mark.parametrize("geom", ["euclidean", "lorentz"])
@pytest.mark.parametrize(("qc", "kc"), [(1, 1), (7, 13), (64, 5), (1000, 1000)])
def test_streaming_topk_equals_full_topk(geom: str, qc: int, kc: int) -> None:
    make = _unit if geom == "euclidean" else _lorentz_points
    q, k = make(37, 6, 0), make(53, 6, 1)
    score = similarity_for(geom, 1.0)
    values, indices = streaming_topk(q, k, score, 10, query_chunk=qc, key_chunk=kc)
    full = score(q, k)
    ref_v, ref_i = full.topk(10, dim=1)
    assert torch.equal(indices, ref_i)
    assert torch.allclose(values, ref_v)


def _reference_recalls(img: torch.Tensor, txt: torch.Tensor, cap_img: list[int], score, ks) -> dict[str, float]:
    """Independent: full score matrix, numpy ranks of the best true item."""
    s = score(img, txt).numpy()
    cap_img = np.asarray(cap_img)
    out = {}
    for k in ks:
        i2t = []
        for i in range(s.shape[0]):
            own = np.flatnonzero(cap_img == i)
            best = s[i, own].max()
            i2t.append((s[i] > best).sum() < k)
        t2i = [(s[:, t] > s[cap_img[t], t]).sum() < k for t in range(s.shape[1])]
        out[f"i2t_R@{k}"] = float(np.mean(i2t))
        out[f"t2i_R@{k}"] = float(np.mean(t2i))
    return out


@pytest.mark.parametrize("geom", ["euclidean", "lorentz"])
def test_retrieval_chunked_equals_unchunked(geom: str) -> None:
    make = _unit if geom == "euclidean" else _lorentz_points
    img = make(60, 8, 2)
    cap_img = [i // 3 for i in range(180)]  # 3 captions per image
    txt = img[cap_img] + 0.8 * make(180, 8, 3)  # noisy copies: recall strictly between 0 and 1
    if geom == "euclidean":
        txt = torch.nn.functional.normalize(txt, dim=1)
    score = similarity_for(geom, 1.0)
    ks = (1, 5, 10)
    whole = retrieval_metrics(img, txt, cap_img, score, ks, query_chunk=10_000, key_chunk=10_000)
    chunked = retrieval_metrics(img, txt, cap_img, score, ks, query_chunk=7, key_chunk=11)
    assert chunked == whole
    assert whole == pytest.approx(_reference_recalls(img, txt, cap_img, score, ks))
    assert 0 < whole["i2t_R@1"] < 1 and 0 < whole["t2i_R@5"] < 1


def test_pep_chunked_equals_unchunked_and_full_matrix() -> None:
    n_img = 40
    chains = [tuple(f"img{i} level{k}" for k in range(1, 5)) for i in range(n_img)]
    pool = [c[3] for c in chains[::2]] + [f"other {j}" for j in range(15)]  # 20 own + 15 foreign
    pairs = build_pairs(chains, pool)
    txt = _lorentz_points(len(pairs.texts), 6, 4)
    img = _lorentz_points(n_img, 6, 5)
    big = pair_angles(txt, img, pairs, curv=1.3)
    small = pair_angles(txt, img, pairs, curv=1.3, block_entries=37)  # pool 35 -> 1 image a block
    assert np.allclose(big[0], small[0]) and np.array_equal(big[1], small[1])
    assert np.allclose(np.sort(big[2]), np.sort(small[2]))
    assert pep_metrics(*big) == pytest.approx(pep_metrics(*small))
    # Independent: the whole pairwise matrix, negatives picked by text comparison.
    full = geometry.pairwise_exterior_angle(txt, img, 1.3).numpy()
    index = {t: j for j, t in enumerate(pairs.texts)}
    neg = [full[index[t], i] for i in range(n_img) for t in dict.fromkeys(pool) if t not in chains[i]]
    pos = [full[index[t], i] for i in range(n_img) for t in chains[i]]
    assert len(neg) == n_img * 35 - 20
    assert np.allclose(np.sort(big[2]), np.sort(neg))
    assert np.allclose(big[0], pos)


def test_threshold_retrieval_chunked_equals_unchunked() -> None:
    img = _lorentz_points(30, 5, 6)
    txt = _lorentz_points(50, 5, 7)
    radius = geometry.dist0(txt, 1.0)
    g = np.random.default_rng(0)
    gt = [[{int(g.integers(50))} for _ in range(4)] for _ in range(30)]
    score = similarity_for("lorentz", 1.0)
    a = threshold_retrieval(img, txt, radius, gt, score, steps=50, chunk=1)
    b = threshold_retrieval(img, txt, radius, gt, score, steps=50, chunk=1000)
    assert a == b


def test_paired_scores_equal_diagonal() -> None:
    x, y = _lorentz_points(23, 4, 8), _lorentz_points(23, 4, 9)
    score = similarity_for("lorentz", 0.7)
    assert torch.allclose(paired_scores(x, y, score, chunk=5), score(x, y).diagonal())
    assert torch.allclose(paired_scores(x, y, score, chunk=5), -geometry.paired_dist(x, y, 0.7))
