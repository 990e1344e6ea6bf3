"""The probe's metrics (argent.probe.metrics): macro F1 and its baselines by hand and against
scikit-learn, per-split and per-category scores, the seeds' interval against SciPy, visual coherence
against a pairwise loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import f1_score

from argent.probe import metrics
from argent.probe.protocol import Questions


def test_macro_f1_by_hand_and_sklearn():
    y = np.array([1, 1, 0, 0])
    p = np.array([1, 0, 0, 0])
    # Yes: P 1, R ½ -> ⅔; No: P ⅔, R 1 -> 0.8
    assert metrics.macro_f1(y, p) == pytest.approx((2 / 3 + 0.8) / 2)
    rng = np.random.default_rng(0)
    for _ in range(10):
        y, p = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
        assert metrics.macro_f1(y, p) == pytest.approx(f1_score(y, p, average="macro"))


def test_majority_baseline_by_hand():
    y = np.array([1, 1, 1, 0, 0])
    scores = metrics._scores(y, y)
    # always No: F1(No) = 2·(⅖·1)/(⅖ + 1) = 4/7, F1(Yes) = 0
    assert scores["always_no"] == pytest.approx(2 / 7)
    # always Yes: F1(Yes) = 2·(⅗)/(⅗ + 1) = ¾
    assert scores["always_yes"] == pytest.approx(3 / 8)
    assert scores["macro_f1"] == 1.0


def test_coin_baseline_matches_simulation():
    rng = np.random.default_rng(0)
    y = (rng.random(200_000) < 0.7).astype(int)
    coin = rng.integers(0, 2, len(y))
    assert metrics.coin_macro_f1(y.mean()) == pytest.approx(f1_score(y, coin, average="macro"), abs=3e-3)


def test_split_metrics_per_category_match_sklearn():
    rng = np.random.default_rng(1)
    n = 300
    qs = Questions(np.arange(n), rng.integers(0, 5, n), rng.random(n) < 0.6, rng.integers(0, 2, n).astype(np.int8))
    preds = rng.integers(0, 2, n).astype(np.int8)
    masks = {"leaf": ~qs.hypernym, "hypernym": qs.hypernym, "unseen": np.zeros(n, dtype=bool)}
    out = metrics.split_metrics(qs, preds, masks, ["l0", "l1", "h0", "h1", "h2"])
    assert out["unseen"] is None
    leaf = ~qs.hypernym
    assert out["leaf"]["macro_f1"] == pytest.approx(f1_score(qs.answer[leaf], preds[leaf], average="macro"))
    per = out["hypernym"]["per_category"]
    for c, name in enumerate(["l0", "l1", "h0", "h1", "h2"]):
        m = qs.hypernym & (qs.concept == c)
        assert per[name]["macro_f1"] == pytest.approx(f1_score(qs.answer[m], preds[m], average="macro"))
        assert per[name]["n"] == m.sum()
    assert out["hypernym"]["category_mean_macro_f1"] == pytest.approx(np.mean([v["macro_f1"] for v in per.values()]))


def test_mean_ci_matches_scipy():
    values = [0.61, 0.7, 0.66]
    out = metrics.mean_ci(values)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
    assert out["mean"] == pytest.approx(np.mean(values))
    assert out["ci95"] == pytest.approx((high - low) / 2)
    assert metrics.mean_ci([0.5])["ci95"] is None
    assert metrics.mean_ci([None, 0.5, float("nan")])["n"] == 1
    assert metrics.mean_ci([])["mean"] is None


def test_visual_coherence_matches_pairwise_loop(hier, images):
    features = torch.randn(len(images), 6, generator=torch.Generator().manual_seed(0))
    mask = np.random.default_rng(0).random(len(images)) < 0.7
    out = metrics.visual_coherence(features, images, mask, hier)
    x = features.numpy().astype(np.float64)
    for h in hier.hypernyms:
        idx = [i for i in range(len(images)) if mask[i] and images[i] in hier.members[h]]
        unit = x / np.linalg.norm(x, axis=1, keepdims=True)
        cos = [unit[i] @ unit[j] for a, i in enumerate(idx) for j in idx[a + 1:]]
        assert out[h] == pytest.approx(np.mean(cos))
