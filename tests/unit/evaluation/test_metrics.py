"""Evaluation metrics on small hand-built cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from argent import geometry
from argent.evaluation.analysis import norm_summary, poincare_projection
from argent.evaluation.compositional import compositional_metrics
from argent.evaluation.hierarcaps_protocol import level_order_correlation, threshold_retrieval
from argent.evaluation.pep import build_pairs, entailment_probability, pair_angles, pep_metrics
from argent.evaluation.retrieval import folded_retrieval_hits, recall_at_k, retrieval_hits, retrieval_metrics
from argent.evaluation.templates import resolve_templates
from argent.evaluation.zeroshot import average_prompts, classification_metrics, fill_templates


def matrix_score(scores: torch.Tensor):
    """A score function over one-hot 'embeddings' that reads a fixed (Q, K) score matrix."""
    return lambda q, k: q @ scores @ k.T


def one_hot(n: int) -> torch.Tensor:
    return torch.eye(n, dtype=torch.float64)


# ------------------------------------------------------------------ retrieval
def test_retrieval_hand_case() -> None:
    # 3 images; captions 0,1 -> image 0; 2,3 -> image 1; 4,5 -> image 2.
    caption_image = [0, 0, 1, 1, 2, 2]
    s = torch.tensor(
        [
            [0.9, 0.1, 0.8, 0.7, 0.6, 0.5],  # image 0: its caption 0 is 1st  -> hit at 1
            [0.9, 0.8, 0.1, 0.7, 0.6, 0.5],  # image 1: best own caption (3) is 3rd -> hit at 3
            [0.9, 0.8, 0.7, 0.6, 0.5, 0.1],  # image 2: best own caption (4) is 5th -> hit at 5
        ],
        dtype=torch.float64,
    )
    # Text->image scores are the transpose; caption t's own image rank:
    # t0: [0.9,0.9,0.9] tie... avoid ties by adding a tiny per-image offset.
    s = s + torch.tensor([[0.0], [0.01], [0.02]], dtype=torch.float64)
    img, txt = one_hot(3), one_hot(6)
    score = lambda a, b: (a @ s @ b.T) if a.shape[1] == 3 else (a @ s.T @ b.T)  # noqa: E731
    m = retrieval_metrics(img, txt, caption_image, score, ks=(1, 3, 5), query_chunk=2, key_chunk=4)
    assert m["i2t_R@1"] == pytest.approx(1 / 3)
    assert m["i2t_R@3"] == pytest.approx(2 / 3)
    assert m["i2t_R@5"] == pytest.approx(1.0)
    # t2i: column t of s, ranks of the own image among 3 images.
    ranks = []
    for t, i in enumerate(caption_image):
        col = s[:, t]
        ranks.append(int((col > col[i]).sum()))
    for k in (1, 3):
        assert m[f"t2i_R@{k}"] == pytest.approx(np.mean([r < k for r in ranks]))
    assert m["t2i_R@3"] == 1.0  # only 3 images: always within the top 3


def test_recall_at_k_truth_forms() -> None:
    top = torch.tensor([[2, 0, 1], [1, 2, 0]])
    assert recall_at_k(top, torch.tensor([0, 1]), ks=(1, 2)) == {1: 0.5, 2: 1.0}
    assert recall_at_k(top, [{1}, {0, 2}], ks=(1, 3)) == {1: 0.0, 3: 1.0}


def test_retrieval_skips_images_without_captions() -> None:
    s = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], dtype=torch.float64)
    score = lambda a, b: (a @ s @ b.T) if a.shape[1] == 3 else (a @ s.T @ b.T)  # noqa: E731
    m = retrieval_metrics(one_hot(3), one_hot(2), [0, 1], score, ks=(1,))
    assert m["i2t_R@1"] == 1.0  # image 2 has no caption and is not a query


def test_folded_retrieval_ranks_within_each_gallery_only() -> None:
    torch.manual_seed(0)
    img, txt = torch.randn(10, 8), torch.randn(23, 8)
    caption_image = torch.tensor([i % 10 for i in range(23)])
    score = lambda a, b: a @ b.T  # noqa: E731
    hits, queried, order = folded_retrieval_hits(img, txt, caption_image, score, 4, ks=(1, 2))
    assert queried.tolist() == list(range(10)) and sorted(order.tolist()) == list(range(23))
    # each fold is its own retrieval problem on its own images and captions
    expected_t2i, expected_i2t = [], []
    for start in (0, 4, 8):
        stop = min(start + 4, 10)
        mine = torch.nonzero((caption_image >= start) & (caption_image < stop)).squeeze(1)
        one, _ = retrieval_hits(img[start:stop], txt[mine], caption_image[mine] - start, score, ks=(1, 2))
        expected_t2i.append(one["t2i_R@1"])
        expected_i2t.append(one["i2t_R@2"])
    assert torch.equal(hits["t2i_R@1"], torch.cat(expected_t2i))
    assert torch.equal(hits["i2t_R@2"], torch.cat(expected_i2t))
    # a fold as large as the split is the plain retrieval; a smaller gallery is an easier one
    whole, _, whole_order = folded_retrieval_hits(img, txt, caption_image, score, 0, ks=(1,))
    plain, _ = retrieval_hits(img, txt, caption_image, score, ks=(1,))
    assert torch.equal(whole["t2i_R@1"], plain["t2i_R@1"]) and whole_order.tolist() == list(range(23))
    assert hits["t2i_R@1"].float().mean() >= whole["t2i_R@1"].float().mean()


# ------------------------------------------------------------------ PEP
def test_pep_hand_case_against_hand_auc_ap() -> None:
    phi_pos = np.array([0.1, 0.2, 2.0])
    phi_neg = np.array([0.3, 1.7, 1.8])
    m = pep_metrics(phi_pos, np.array([1, 2, 3]), phi_neg)
    # p_Ent: pos [0.936, 0.873, 0], neg [0.809, 0, 0]; AUC by pair counting, ties = 1/2.
    assert m["auc"] == pytest.approx(7 / 9)
    # AP: two positives at precision 1, then the tied group at 0 (3 of 6 positive) adds 1/3 · 1/2.
    assert m["ap"] == pytest.approx(5 / 6)
    assert m["raw_auc"] == pytest.approx(6 / 9)  # -φ: pos 2.0 loses to every negative
    assert m["auc_L1"] == 1.0 and m["auc_L3"] == pytest.approx(1 / 3)  # (0 vs [0.81,0,0]): 0 + ½ + ½
    assert m["n_positive"] == 3 and m["n_negative"] == 3
    assert m["zero_score_share"] == pytest.approx(3 / 6)
    # What the clamp ties: pos at 0 (1 of 3) against neg at 0 (2 of 3) are 2 of the 9 comparisons.
    assert m["tied_share"] == pytest.approx(2 / 9) and m["tied_share_L3"] == pytest.approx(2 / 3)
    assert m["inside_share"] == pytest.approx(2 / 3) and m["inside_share_negative"] == pytest.approx(1 / 3)
    assert m["inside_share_L1"] == 1.0 and m["inside_share_L3"] == 0.0
    assert m["raw_auc_L3"] == 0.0 and m["raw_auc_L1"] == 1.0  # φ 2.0 is above every negative's angle


def test_pep_auc_is_half_the_ties_plus_the_untied_ranking() -> None:
    """AUC = (1 − τ)·AUC_untied + τ/2: with most comparisons tied at the clamp, the AUC is set by how
    many positives leave the tie, whatever their order (docs/statistics.md, "What a metric can rank")."""
    rng = np.random.default_rng(1)
    phi_neg = np.r_[rng.uniform(1.6, 3.0, 950), rng.uniform(0.2, 1.5, 50)]
    phi_pos = np.r_[rng.uniform(1.6, 2.0, 300), rng.uniform(0.1, 1.5, 100)]
    m = pep_metrics(phi_pos, np.ones(400, dtype=int), phi_neg)
    p_pos, p_neg = np.maximum(0, 1 - 2 * phi_pos / math.pi), np.maximum(0, 1 - 2 * phi_neg / math.pi)
    tied = (p_pos[:, None] == p_neg[None, :])
    assert m["tied_share"] == pytest.approx(tied.mean())
    untied = (p_pos[:, None] > p_neg[None, :])[~tied].mean()
    assert m["auc"] == pytest.approx((1 - tied.mean()) * untied + tied.mean() / 2)


def test_pep_metrics_equal_sklearn_on_same_scores() -> None:
    rng = np.random.default_rng(0)
    phi_pos = rng.uniform(0, math.pi, 40)
    phi_neg = rng.uniform(0, math.pi, 300)
    levels = np.repeat([1, 2, 3, 4], 10)
    m = pep_metrics(phi_pos, levels, phi_neg)
    y = np.r_[np.ones(40), np.zeros(300)]
    p = np.maximum(0, 1 - 2 * np.r_[phi_pos, phi_neg] / math.pi)
    assert m["auc"] == pytest.approx(roc_auc_score(y, p))
    assert m["ap"] == pytest.approx(average_precision_score(y, p))
    sel = np.r_[levels == 2, np.ones(300, bool)]
    assert m["ap_L2"] == pytest.approx(average_precision_score(y[sel], p[sel]))
    # Raw AUC by explicit pair counting (independent of sklearn).
    wins = (phi_pos[:, None] < phi_neg[None, :]).mean()
    assert m["raw_auc"] == pytest.approx(wins)


def test_entailment_probability_clamp() -> None:
    assert entailment_probability([0.0, math.pi / 4, math.pi / 2, 3.0]).tolist() == pytest.approx([1, 0.5, 0, 0])


def test_build_pairs_excludes_own_captions_from_negatives() -> None:
    chains = [("a", "b", "c", "d"), ("a", "e", "f", "g")]
    pairs = build_pairs(chains, pool=["d", "g", "x", "x"])
    assert pairs.texts == ["a", "b", "c", "d", "e", "f", "g", "x"]
    assert pairs.pos_level.tolist() == [1, 2, 3, 4] * 2
    assert pairs.pos_text.tolist() == [0, 1, 2, 3, 0, 4, 5, 6]
    assert [pairs.texts[i] for i in pairs.pool_text] == ["d", "g", "x"]  # duplicate dropped
    # image 0 owns pool caption "d" (pool pos 0), image 1 owns "g" (pool pos 1)
    assert list(zip(pairs.excl_pool.tolist(), pairs.excl_image.tolist())) == [(0, 0), (1, 1)]
    assert pairs.n_negatives == 2 * 3 - 2
    emb = torch.randn(len(pairs.texts), 3, dtype=torch.float64)
    img = torch.randn(2, 3, dtype=torch.float64)
    phi_pos, lev, phi_neg = pair_angles(emb, img, pairs, curv=1.0)
    full = geometry.pairwise_exterior_angle(emb, img, 1.0)
    # negatives: image 0 vs g, x; image 1 vs d, x
    expect = sorted([full[6, 0], full[7, 0], full[3, 1], full[7, 1]])
    assert sorted(phi_neg.tolist()) == pytest.approx([v.item() for v in expect])
    assert phi_pos.tolist() == pytest.approx([full[t, i].item() for t, i in zip(pairs.pos_text, pairs.pos_image)])


# ------------------------------------------------------------------ HierarCaps protocol
def test_level_order_correlation() -> None:
    radii = np.array([[1, 2, 3, 4], [4, 3, 2, 1], [1, 2, 4, 3], [2, 2, 2, 2]], dtype=float)
    m = level_order_correlation(radii)
    # tau of [1,2,4,3]: 5 concordant, 1 discordant pair -> 4/6.
    assert m["kendall_tau"] == pytest.approx((1 - 1 + 4 / 6) / 3)
    assert m["kendall_tau_undefined_rows"] == 1 and m["kendall_tau_rows"] == 3
    assert m["level_order_exact_share"] == pytest.approx(1 / 4)


def test_threshold_retrieval_hand_case() -> None:
    # Pool of 4 texts with radii 1..4 (given out of order); 2 images.
    radius = torch.tensor([3.0, 1.0, 4.0, 2.0], dtype=torch.float64)
    # In radius order the texts are 1, 3, 0, 2.
    s = torch.tensor(
        [
            [0.3, 0.1, 0.9, 0.5],  # img 0: prefixes {1}->1, {1,3}->3, {1,3,0}->3, all->2 : picks 1,3,2
            [0.2, 0.8, 0.1, 0.4],  # img 1: picks 1,1,1,1 -> {1}
        ],
        dtype=torch.float64,
    )
    gt = [[{1}, {3}, {0}, {2}], [{0}, {2}, {3}, {1}]]
    score = lambda a, b: a @ s @ b.T  # noqa: E731
    m = threshold_retrieval(one_hot(2), one_hot(4), radius, gt, score, steps=4, chunk=1)
    # img 0: picks {1,3,2}, all in GT -> P 1, R 3/4. img 1: picks {1} -> P 1, R 1/4.
    assert m["threshold_precision"] == pytest.approx(1.0)
    assert m["threshold_recall"] == pytest.approx((3 / 4 + 1 / 4) / 2)
    # Only text 2 is ground truth (at level 1): img 0 picked it among 3 -> P 1/3, R 1/4; img 1: 0.
    gt_one = [[{2}, set(), set(), set()]] * 2
    m = threshold_retrieval(one_hot(2), one_hot(4), radius, gt_one, score, steps=4)
    assert m["threshold_precision"] == pytest.approx((1 / 3 + 0) / 2)
    assert m["threshold_recall"] == pytest.approx((1 / 4 + 0) / 2)


# ------------------------------------------------------------------ compositional
def test_compositional_strict_and_groups() -> None:
    pos = [0.9, 0.5, 0.5, 0.2, 0.8, 0.7]
    neg = [0.1, 0.5, 0.4, 0.3, 0.1, 0.1]  # item 1 is a tie: wrong
    cats = ["replace_att", "replace_att", "replace_obj", "swap_obj", "add_att", "add_att"]
    m = compositional_metrics(pos, neg, cats)
    assert m["acc_replace_att"] == 0.5 and m["acc_replace_obj"] == 1.0
    assert m["acc_swap_obj"] == 0.0 and m["acc_add_att"] == 1.0
    assert m["mean_replace"] == 0.75 and m["mean_swap"] == 0.0 and m["mean_add"] == 1.0
    assert m["mean"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert m["item_accuracy"] == pytest.approx(4 / 6)
    assert m["n_add_att"] == 2


# ------------------------------------------------------------------ zero-shot
def test_classification_metrics_imbalanced() -> None:
    labels = [0, 0, 0, 0, 1, 2]
    preds = [0, 0, 0, 1, 0, 2]
    m = classification_metrics(preds, labels, n_classes=4)
    assert m["top1"] == pytest.approx(4 / 6)
    assert m["mean_per_class"] == pytest.approx((3 / 4 + 0 + 1) / 3)
    assert m["n_classes_evaluated"] == 3


def test_prompt_helpers() -> None:
    assert fill_templates(["sq", "ci"], ["a {}.", "the {}!"]) == ["a sq.", "the sq!", "a ci.", "the ci!"]
    feats = torch.tensor([[[3.0, 0.0], [0.0, 1.0]]])
    assert average_prompts(feats, normalise_each=False).tolist() == [[1.5, 0.5]]
    assert average_prompts(feats, normalise_each=True).tolist() == [[0.5, 0.5]]
    assert len(resolve_templates("imagenet")) == 7
    with pytest.raises(ValueError, match=r"templates\[1\]"):
        resolve_templates(["a {}.", "no slot"])
    with pytest.raises(ValueError, match="unknown template set"):
        resolve_templates("nope")


# ------------------------------------------------------------------ analysis
def test_poincare_projection_keeps_hyperbolic_radius() -> None:
    torch.manual_seed(0)
    x = torch.randn(50, 8, dtype=torch.float64) * 2
    c = 0.5
    xy = poincare_projection(x, c)
    norms = np.linalg.norm(x.numpy(), axis=1)
    d0 = np.arcsinh(math.sqrt(c) * norms) / math.sqrt(c)
    assert np.linalg.norm(xy, axis=1) == pytest.approx(np.tanh(math.sqrt(c) * d0 / 2))
    assert (np.linalg.norm(xy, axis=1) < 1).all()


def test_norm_summary() -> None:
    s = norm_summary(np.arange(1, 101, dtype=float), bins=10)
    assert s["n"] == 100 and s["mean"] == 50.5 and s["min"] == 1 and s["max"] == 100
    assert s["median"] == pytest.approx(50.5)
    assert sum(s["histogram"]["counts"]) == 100
