"""Per-item values in the evaluation JSON (``items``) and their reader for the tables.

For every emitted vector: mean(values) == the metric (1e-9 relative), one value per id, unique
ids; the ids are the same, in the same order, for two different models on the same benchmark;
PEP's placement values average to sklearn's AUC (ties included). Real evaluations on a small
generated hiershapes set (every protocol) and the oracle data of test_eval_runner (known answers,
a skipped image).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from test_eval_hiershapes import HS_BENCHMARKS, hiershapes  # noqa: F401 (fixture)
from test_eval_runner import OracleModel, _karpathy, _sugarcrepe

from argent import geometry
from argent.evaluation.benchmarks import parse_benchmark
from argent.evaluation.items import ItemError, auc_placements, cluster_item_values, item_vector, macro_item_values
from argent.evaluation.pep import build_pairs, negative_index, pair_angles
from argent.evaluation.runner import evaluate
from argent.io import atomic_write_json, flatten
from argent.tables.items import collect_items

# The item keys each protocol must emit on hiershapes (compositional: plus acc_<category>, mean_<group>).
EXPECTED = {
    "zeroshot": {"top1", "mean_per_class", "tie", "lca", "jaccard", "hier_precision", "hier_recall"},
    "retrieval": {"i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5"},
    "pep": {"auc"},
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


def test_every_protocol_on_hiershapes(hiershapes: Path, two_models) -> None:  # noqa: F811
    manifest = json.loads((hiershapes / "manifest.json").read_text())["counts"]
    for name, raw in HS_BENCHMARKS.items():
        entry = parse_benchmark(name, raw, base_dir=hiershapes.parent)
        a, b = (evaluate(model, name, entry) for model in two_models)
        protocol = raw["protocol"]
        for result in (a, b):
            check_identity(result)
            keys = set(result["items"])
            assert EXPECTED[protocol] <= keys, (name, keys)
            assert not keys & {"ap", "raw_auc", "kendall_tau", "n_positive", "level_order_exact_share"}
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
            # One value per image row: its pairs' DeLong placements summed (check_identity: mean = AUC).
            assert len(items["auc"]["ids"]) == a["counts"]["n_items"]
        elif protocol == "hierarcaps":
            assert len(items["threshold_recall"]["ids"]) == a["counts"]["n_images"]
        elif protocol == "compositional":
            categories = set(manifest["sugarcrepe"])
            assert {f"acc_{c}" for c in categories} <= set(items)
            assert sum(len(items[f"acc_{c}"]["ids"]) for c in categories) == len(items["mean"]["ids"])
            groups = {c.split("_", 1)[0] for c in categories}
            assert {f"mean_{g}" for g in groups} <= set(items)


def test_euclidean_pep_has_no_items(hiershapes: Path) -> None:  # noqa: F811
    from argent.config import model_from
    from argent.models import build_model

    entry = parse_benchmark("hs_pep", HS_BENCHMARKS["hs_pep"], base_dir=hiershapes.parent)
    result = evaluate(build_model(model_from("tiny"), "euclidean"), "hs_pep", entry)
    assert result["status"] == "n/a" and result["items"] == {}


# ------------------------------------------------------------------ oracle data: known values, skipped items
def test_compositional_macro_mean_items(tmp_path: Path) -> None:
    json_dir, image_dir = _sugarcrepe(tmp_path)  # replace_att: 3 right; swap_att: 1 tie (wrong)
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
    ann = _karpathy(tmp_path, broken=True)
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
    atomic_write_json(bad, {"items": {"top1": {"ids": ["a"], "values": [1, 2]}}})
    with pytest.raises(ValueError, match=r"bad.json: items\['top1'\]"):
        collect_items(eval_dir)
