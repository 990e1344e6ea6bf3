"""Per-item values in the evaluation JSON (``items``) and their reader for the tables.

For every emitted vector: mean(values) == the metric (1e-9 relative), one value per id, unique
ids; the ids are the same, in the same order, for two different models on the same benchmark;
PEP's placement values average to sklearn's AUC (ties included), and its per-image clustered-DeLong
pseudo-values have Obuchowski's variance and the true spread of the AUC over simulated test sets.
Real evaluations on a small generated hiershapes set (every protocol) and the oracle data of
tests.fixtures (known answers, a skipped image).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from argent import geometry
from argent.evaluation.benchmarks import parse_benchmark
from argent.evaluation.items import (
    ItemError,
    auc_placements,
    cluster_item_values,
    clustered_auc_pseudovalues,
    item_vector,
    macro_item_values,
)
from argent.evaluation.pep import build_pairs, negative_index, pair_angles
from argent.evaluation.runner import evaluate
from argent.io import atomic_write_json, flatten
from argent.tables.items import collect_items
from tests.fixtures import HS_BENCHMARKS, OracleModel, write_karpathy, write_sugarcrepe

# The item keys each protocol must emit on hiershapes (compositional: plus acc_<category>, mean_<group>).
EXPECTED = {
    "zeroshot": {"top1", "mean_per_class", "tie", "lca", "jaccard", "hier_precision", "hier_recall"},
    "retrieval": {"i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5"},
    "pep": {"auc", "raw_auc"},
    "hierarcaps": {"threshold_precision", "threshold_recall"},
    "compositional": {"mean", "item_accuracy"},
    "analysis": set(),
}


def check_identity(result: dict) -> None:
    """The invariant of every item vector of one result JSON."""
    metrics = flatten(result["metrics"], sep="/")
    for key, vector in result["items"].items():
        ids, values = vector["ids"], vector["values"]
        assert len(ids) == len(values) > 0, key
        assert len(set(ids)) == len(ids) and all(isinstance(i, str) for i in ids), key
        assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values), key
        assert math.isclose(float(np.mean(values)), metrics[key], rel_tol=1e-9, abs_tol=1e-12), key


# ------------------------------------------------------------------ the helpers
def test_item_vector_checks_and_names_the_key() -> None:
    out = item_vector(["a", "b", "c", "d"], np.array([1.0, 0.0, 1.0, 1.0]), 0.75, "top1")
    assert out == {"ids": ["a", "b", "c", "d"], "values": [1, 0, 1, 1]}
    assert all(type(v) is int for v in out["values"])  # 0/1 written as ints
    third = item_vector(["a", "b", "c"], [0.0, 0.0, 1.0], 1 / 3, "x")["values"]
    assert third == [0, 0, 1]
    assert item_vector(["a", "b"], [0.1, 0.2], 0.15, "x")["values"] == [0.1, 0.2]  # full precision
    with pytest.raises(ItemError, match=r"items\['top1'\]: mean of 2 item values 0.5 != metric 0.6"):
        item_vector(["a", "b"], [1.0, 0.0], 0.6, "top1")
    with pytest.raises(ItemError, match=r"items\['k'\]: ids are not unique: \['a'\]"):
        item_vector(["a", "a"], [1.0, 1.0], 1.0, "k")
    with pytest.raises(ItemError, match=r"items\['k'\]: 3 ids but values of shape \(2,\)"):
        item_vector(["a", "b", "c"], [1.0, 1.0], 1.0, "k")
    with pytest.raises(ItemError, match="null metric"):
        item_vector(["a"], [1.0], None, "k")
    with pytest.raises(ItemError, match="non-finite"):
        item_vector(["a", "b"], [1.0, float("nan")], 1.0, "k")


def test_macro_item_values_average_to_the_macro_mean() -> None:
    g = np.random.default_rng(0)
    groups = g.choice(["a", "b", "c"], size=50, p=[0.7, 0.2, 0.1])
    values = g.integers(0, 2, size=50).astype(float)
    macro = np.mean([values[groups == k].mean() for k in np.unique(groups)])
    assert macro_item_values(values, groups).mean() == pytest.approx(macro, rel=1e-12)
    assert np.array_equal(macro_item_values(values[:6], np.array(list("aabbcc"))), values[:6])  # balanced: unchanged


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_placements_equal_sklearn_with_ties(seed: int) -> None:
    g = np.random.default_rng(seed)
    # Few distinct scores (many ties within and across the classes), a clamp-like mass at 0.
    pos = np.maximum(0, g.integers(-3, 6, size=37)) / 5
    neg = np.maximum(0, g.integers(-6, 4, size=211)) / 5
    v_pos, v_neg = auc_placements(pos, neg)
    auc = roc_auc_score(np.r_[np.ones(pos.size), np.zeros(neg.size)], np.r_[pos, neg])
    assert v_pos.mean() == pytest.approx(auc, rel=1e-12) and v_neg.mean() == pytest.approx(auc, rel=1e-12)
    assert np.concatenate([v_pos, v_neg]).mean() == pytest.approx(auc, rel=1e-12)
    # By hand: the share of negatives below each positive, ties ½.
    assert v_pos[0] == pytest.approx(((neg < pos[0]).sum() + 0.5 * (neg == pos[0]).sum()) / neg.size)
    assert v_neg[0] == pytest.approx(((pos > neg[0]).sum() + 0.5 * (pos == neg[0]).sum()) / pos.size)
    # All tied: AUC ½ everywhere.
    assert set(np.concatenate(auc_placements(np.zeros(3), np.zeros(4)))) == {0.5}


def _obuchowski_variance(pos: np.ndarray, pos_c: np.ndarray, neg: np.ndarray, neg_c: np.ndarray, n: int) -> float:
    """Obuchowski (1997) clustered variance S10/P + S01/M + 2·S11/(P·M), from the P × M kernel."""
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    theta = kernel.mean()
    v10, v01 = kernel.mean(axis=1), kernel.mean(axis=0)  # DeLong's V10 (per positive), V01 (per negative)
    a = np.array([v10[pos_c == c].sum() - (pos_c == c).sum() * theta for c in range(n)])
    b = np.array([v01[neg_c == c].sum() - (neg_c == c).sum() * theta for c in range(n)])
    s10 = n / ((n - 1) * pos.size) * (a**2).sum()
    s01 = n / ((n - 1) * neg.size) * (b**2).sum()
    s11 = n / (n - 1) * (a * b).sum()
    return s10 / pos.size + s01 / neg.size + 2 * s11 / (pos.size * neg.size)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clustered_auc_pseudovalues_are_sklearn_auc_and_obuchowski_variance(seed: int) -> None:
    g = np.random.default_rng(seed)
    n = 23
    # Unequal clusters, few distinct scores (ties within and across the classes); cluster 0 has no
    # negatives, cluster 1 no positives and cluster n−1 no pairs at all.
    pos_c = np.r_[0, 0, g.integers(2, n - 1, size=40)]
    neg_c = np.r_[1, g.integers(2, n - 1, size=150)]
    pos = np.maximum(0, g.integers(-2, 6, size=pos_c.size)) / 5 + 0.1 * (pos_c % 3)  # a cluster effect
    neg = np.maximum(0, g.integers(-5, 4, size=neg_c.size)) / 5
    ids = [f"img{c}" for c in range(n)]
    out_ids, psi = clustered_auc_pseudovalues(pos, pos_c, neg, neg_c, ids)
    assert out_ids == ids and psi.shape == (n,)
    auc = roc_auc_score(np.r_[np.ones(pos.size), np.zeros(neg.size)], np.r_[pos, neg])
    assert psi.mean() == pytest.approx(auc, rel=1e-12)
    assert psi[-1] == pytest.approx(auc, rel=1e-12)  # no pairs: no deviation from the AUC
    # var(ψ, ddof=1) / C is Obuchowski's clustered variance, computed here from the pair kernel.
    assert psi.var(ddof=1) / n == pytest.approx(_obuchowski_variance(pos, pos_c, neg, neg_c, n), rel=1e-9)
    # By hand for cluster 0 (positives only): AUC + (C/P)·(Σ v_pos − P_0·AUC).
    v_pos, _ = auc_placements(pos, neg)
    assert psi[0] == pytest.approx(auc + n / pos.size * (v_pos[:2].sum() - 2 * auc), rel=1e-12)
    with pytest.raises(ValueError, match="integer positions in 0..22"):
        clustered_auc_pseudovalues(pos, np.r_[pos_c[:-1], n], neg, neg_c, ids)
    with pytest.raises(ValueError, match="must be 1-D and match"):
        clustered_auc_pseudovalues(pos, pos_c[:-1], neg, neg_c, ids)


def _simulated_pep_scores(g: np.random.Generator, pool_effect: np.ndarray, n_images: int, n_levels: int):
    """One simulated PEP test set: every image has ``n_levels`` positives and is paired with the
    whole fixed pool. An image effect raises its positives (and half as much its negatives), so the
    pairs of an image are correlated; a caption effect (``pool_effect``, the same in every test set)
    makes some pool captions harder negatives than others."""
    image = g.normal(0.0, 1.0, n_images)
    pos_c = np.repeat(np.arange(n_images), n_levels)
    neg_c = np.repeat(np.arange(n_images), pool_effect.size)
    pos = 2.0 + image[pos_c] + g.normal(0.0, 1.0, pos_c.size)
    neg = 0.5 * image[neg_c] + np.tile(pool_effect, n_images) + g.normal(0.0, 1.0, neg_c.size)
    return pos, pos_c, neg, neg_c


def test_clustered_auc_se_matches_the_spread_over_test_sets() -> None:
    """The item SE sd(ψ)/√C against the true SD of the AUC over 200 simulated test sets of 400
    images × 4 positives, each image against the same pool of 100 captions (the pool held fixed,
    as the interval assumes). The old weighting (every placement summed with weight C/(P+M),
    ``cluster_item_values``) keeps the mean but its SE is about half the true spread here."""
    g = np.random.default_rng(0)
    n_images, n_levels, reps = 400, 4, 200
    pool_effect = g.normal(0.0, 0.7, 100)
    ids = [str(i) for i in range(n_images)]
    aucs, ses = np.empty(reps), np.empty(reps)
    for r in range(reps):
        pos, pos_c, neg, neg_c = _simulated_pep_scores(g, pool_effect, n_images, n_levels)
        _, psi = clustered_auc_pseudovalues(pos, pos_c, neg, neg_c, ids)
        aucs[r], ses[r] = psi.mean(), psi.std(ddof=1) / math.sqrt(n_images)
    assert 0.8 < aucs.mean() < 0.9
    ratio = ses.mean() / aucs.std(ddof=1)
    assert 0.8 < ratio < 1.25, f"SE / true SD = {ratio:.3f}"


def test_pep_negatives_come_in_negative_index_order_whatever_the_blocking() -> None:
    n_img = 12
    chains = [tuple(f"img{i} level{k}" for k in range(1, 5)) for i in range(n_img)]
    pool = [c[3] for c in chains[::3]] + [f"other {j}" for j in range(5)]
    pairs = build_pairs(chains, pool)
    g = torch.Generator().manual_seed(3)
    lift = lambda n: geometry.exp_map0(torch.randn(n, 5, generator=g, dtype=torch.float64) * 0.7, 1.0)  # noqa: E731
    txt, img = lift(len(pairs.texts)), lift(n_img)
    image, pool_pos = negative_index(pairs, n_img)
    full = geometry.pairwise_exterior_angle(txt, img, 1.0).numpy()
    expect = full[pairs.pool_text.numpy()[pool_pos], image]
    for block in (1 << 22, 9, 1):
        assert np.allclose(pair_angles(txt, img, pairs, 1.0, block_entries=block)[2], expect, rtol=0, atol=1e-12)
    unique_pool = list(dict.fromkeys(pool))
    assert all(unique_pool[p] not in chains[i] for i, p in zip(image, pool_pos))
    assert len(image) == pairs.n_negatives and list(image) == sorted(image)


# ------------------------------------------------------------------ real evaluations, every protocol
@pytest.fixture(scope="module")
def two_models():
    from argent.config import model_from
    from argent.models import build_model

    torch.manual_seed(0)
    a = build_model(model_from("tiny"), "lorentz")
    torch.manual_seed(1)
    b = build_model(model_from("tiny"), "lorentz")
    return a, b


def test_every_protocol_on_hiershapes(hiershapes: Path, two_models) -> None:
    manifest = json.loads((hiershapes / "manifest.json").read_text())["counts"]
    for name, raw in HS_BENCHMARKS.items():
        entry = parse_benchmark(name, raw, base_dir=hiershapes.parent)
        a, b = (evaluate(model, name, entry) for model in two_models)
        protocol = raw["protocol"]
        for result in (a, b):
            check_identity(result)
            keys = set(result["items"])
            assert EXPECTED[protocol] <= keys, (name, keys)
            assert not keys & {"ap", "raw_ap", "kendall_tau", "n_positive", "level_order_exact_share"}
        # Same test set, same order: item i of one model is item i of the other.
        assert set(a["items"]) == set(b["items"])
        for key in a["items"]:
            assert a["items"][key]["ids"] == b["items"][key]["ids"], (name, key)
        assert a["metrics"] != b["metrics"] or protocol == "analysis"  # two different models
        items = a["items"]
        if protocol == "zeroshot":
            assert len(items["top1"]["ids"]) == manifest["classification"] and set(items["top1"]["values"]) <= {0, 1}
            assert all("/" in i for i in items["top1"]["ids"])  # <class id>/<file>
        elif protocol == "retrieval":
            # Text queries are summed per image: the image is the unit the test set draws.
            assert len(items["t2i_R@1"]["ids"]) == a["counts"]["n_images"]
            assert len(items["i2t_R@5"]["ids"]) == a["counts"]["n_images"]
        elif protocol == "pep":
            # One clustered-DeLong pseudo-value per image row (check_identity: mean = AUC).
            assert len(items["auc"]["ids"]) == a["counts"]["n_items"]
        elif protocol == "hierarcaps":
            assert len(items["threshold_recall"]["ids"]) == a["counts"]["n_images"]
        elif protocol == "compositional":
            categories = set(manifest["sugarcrepe"])
            assert {f"acc_{c}" for c in categories} <= set(items)
            assert sum(len(items[f"acc_{c}"]["ids"]) for c in categories) == len(items["mean"]["ids"])
            groups = {c.split("_", 1)[0] for c in categories}
            assert {f"mean_{g}" for g in groups} <= set(items)


def test_euclidean_pep_has_no_items(hiershapes: Path) -> None:
    from argent.config import model_from
    from argent.models import build_model

    entry = parse_benchmark("hs_pep", HS_BENCHMARKS["hs_pep"], base_dir=hiershapes.parent)
    result = evaluate(build_model(model_from("tiny"), "euclidean"), "hs_pep", entry)
    assert result["status"] == "n/a" and result["items"] == {}


# ------------------------------------------------------------------ oracle data: known values, skipped items
def test_compositional_macro_mean_items(tmp_path: Path) -> None:
    json_dir, image_dir = write_sugarcrepe(tmp_path)  # replace_att: 3 right; swap_att: 1 tie (wrong)
    entry = parse_benchmark("c", {"protocol": "compositional", "json_dir": str(json_dir), "image_dir": str(image_dir)})
    result = evaluate(OracleModel(), "c", entry)
    check_identity(result)
    items = result["items"]
    assert items["item_accuracy"] == {"ids": ["replace_att/0", "replace_att/1", "replace_att/2", "swap_att/0"], "values": [1, 1, 1, 0]}
    # mean = (1 + 0) / 2 over 2 categories of 3 and 1 items: replace items weigh 4 / (2 · 3).
    assert items["mean"]["values"] == pytest.approx([2 / 3, 2 / 3, 2 / 3, 0.0])
    assert items["acc_swap_att"] == {"ids": ["swap_att/0"], "values": [0]}
    assert items["mean_swap"]["ids"] == ["swap_att/0"] and items["mean_replace"]["values"] == [1, 1, 1]


def test_skipped_image_is_not_an_item(tmp_path: Path) -> None:
    ann = write_karpathy(tmp_path, broken=True)
    raw = {"protocol": "retrieval", "annotations": str(ann), "image_dir": str(tmp_path / "img"), "ks": [1]}
    result = evaluate(OracleModel(), "r", parse_benchmark("r", raw))
    check_identity(result)
    assert result["partial"] is True
    assert result["items"]["i2t_R@1"] == {"ids": ["0.jpg", "1.jpg", "2.jpg"], "values": [1, 1, 1]}
    assert result["items"]["t2i_R@1"] == {"ids": ["0.jpg", "1.jpg", "2.jpg"], "values": [1, 1, 1]}


def test_cluster_item_values_keep_the_mean() -> None:
    ids, values = cluster_item_values(["a", "b", "a", "c", "b", "a"], np.array([1.0, 0.0, 1.0, 0.5, 1.0, 0.0]))
    assert ids == ["a", "b", "c"]
    assert values == pytest.approx([2.0 * 3 / 6, 1.0 * 3 / 6, 0.5 * 3 / 6])
    assert values.mean() == pytest.approx(3.5 / 6)


# ------------------------------------------------------------------ the tables' reader
def test_collect_items(tmp_path: Path) -> None:
    eval_dir = tmp_path / "results" / "eval"
    items = {"top1": {"ids": ["n1/a.png", "n2/b.png"], "values": [1, 0]}, "tie": {"ids": ["n1/a.png", "n2/b.png"], "values": [0, 2.0]}}
    atomic_write_json(eval_dir / "main" / "argent-tiny" / "seed0" / "hs_zeroshot.json",
                      {"metrics": {"top1": 0.5, "tie": 1.0}, "items": items})
    atomic_write_json(eval_dir / "main" / "clip-tiny" / "seed1" / "hs_zeroshot.json",
                      {"metrics": {"top1": 1.0}, "items": {"top1": {"ids": ["n1/a.png"], "values": [1]}}})
    atomic_write_json(eval_dir / "main" / "clip-tiny" / "seed1" / "hs_pep.json", {"metrics": {"auc": None}, "items": {}})
    atomic_write_json(eval_dir / "main" / "clip-tiny" / "seed1" / "old.json", {"metrics": {"x": 1.0}})  # before items
    out = collect_items(eval_dir)
    assert out == {
        ("main", "argent", "tiny", 0, "hs_zeroshot", "top1"): {"n1/a.png": 1.0, "n2/b.png": 0.0},
        ("main", "argent", "tiny", 0, "hs_zeroshot", "tie"): {"n1/a.png": 0.0, "n2/b.png": 2.0},
        ("main", "clip", "tiny", 1, "hs_zeroshot", "top1"): {"n1/a.png": 1.0},
    }
    assert all(type(v) is float for vec in out.values() for v in vec.values())
    bad = eval_dir / "main" / "clip-tiny" / "seed1" / "bad.json"
    atomic_write_json(bad, {"metrics": {"top1": 1.0}, "items": {"top1": {"ids": ["a"], "values": [1, 2]}}})
    with pytest.raises(ValueError, match=r"bad.json: items\['top1'\]"):
        collect_items(eval_dir)
