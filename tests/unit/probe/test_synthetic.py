"""The probe on synthetic embeddings (no dual encoder): it recovers unseen hypernyms when the image
features carry them linearly, and stays at chance when they only carry leaf identity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argent.probe import conditions, projector, protocol
from argent.probe.config import ProbeOptions

HYPERNYMS, LEAVES_PER, IMAGES_PER = "ABCD", 6, 20


def synthetic(linear: bool, seed: int = 0) -> tuple[conditions.ProbeEmbeddings, protocol.Hierarchy]:
    """4 hypernyms × 6 leaves × 20 images. Features = 0.5·leaf vector + noise, plus the hypernym's
    vector when ``linear``; question embeddings are random unit vectors (no text-side structure)."""
    g = torch.Generator().manual_seed(seed)
    hier = protocol.hierarchy_from_sets({f"{h}{k}": {h, "root"} for h in HYPERNYMS for k in range(LEAVES_PER)})
    dim = 32
    hyper = {h: torch.randn(dim, generator=g) for h in hier.hypernyms}
    leaf = {name: torch.randn(dim, generator=g) for name in hier.leaves}
    features, labels, keys = [], [], []
    for name in hier.leaves:
        for i in range(IMAGES_PER):
            x = 0.5 * leaf[name] + 0.5 * torch.randn(dim, generator=g)
            if linear:
                x = x + sum(hyper[h] for h in hier.ancestors[name])
            features.append(x)
            labels.append(name)
            keys.append(f"{name}_{i:03d}.jpg")
    text = torch.nn.functional.normalize(torch.randn(len(hier.concepts), dim, generator=g), dim=-1)
    return conditions.ProbeEmbeddings(torch.stack(features), labels, keys, text), hier


CFG = dict(seeds=[0, 1], ablations=["random"], levels=[50], shuffles=["none"], epochs=5, batch_size=16)


@pytest.fixture(scope="module")
def results() -> dict[bool, dict]:
    torch.set_num_threads(1)
    out = {}
    for linear in (True, False):
        emb, hier = synthetic(linear)
        out[linear] = conditions.run_probe(emb, hier, ProbeOptions(**CFG), projector.euclidean_space())
    return out


def _unseen(result: dict) -> dict:
    (cond,) = result["conditions"]
    assert cond["name"] == "random-50/none"
    return cond["summary"]["test"]["unseen"]


def test_hierarchy_and_counts(results):
    (cond,) = results[True]["conditions"]
    for record in cond["seeds"]:
        # 50 % of 6 leaves: 3 removed per hypernym -> half of the images lose their hypernym questions.
        assert sorted(len(v) for v in record["removed_leaves"].values()) == [3, 3, 3, 3]
        counts = record["counts"]
        # 24 leaves × 14 training images: 2 leaf questions each; 1 Yes + 1 No hypernym question each.
        assert counts["train"] == {"leaf": 2 * 24 * 14, "hypernym": 2 * 12 * 14, "withheld": 2 * 12 * 14}
        assert counts["test"]["unseen"] == counts["test"]["seen"] == 2 * 12 * 5


def test_linear_hypernyms_are_recovered_on_unseen_leaves(results):
    unseen = _unseen(results[True])
    f1 = unseen["category_mean_macro_f1"]["mean"]
    assert f1 > unseen["category_mean_always_no"]["mean"] + 0.3
    assert f1 > unseen["category_mean_coin"]["mean"] + 0.25
    assert unseen["macro_f1"]["mean"] > 0.8


def test_without_hypernym_structure_unseen_stays_at_chance(results):
    unseen = _unseen(results[False])
    f1 = unseen["category_mean_macro_f1"]["mean"]
    # Leaf identity alone lets the probe fit the seen leaves but says nothing about new ones: it scores
    # like an input-blind guess (a fair coin scores 0.5 here, always-No ⅓) and far below the linear case.
    assert f1 < unseen["category_mean_coin"]["mean"] + 0.1
    assert f1 < _unseen(results[True])["category_mean_macro_f1"]["mean"] - 0.3
    seen = results[False]["conditions"][0]["summary"]["test"]["seen"]["category_mean_macro_f1"]["mean"]
    assert seen > f1 + 0.15  # the seen leaves were learnt


def test_seeds_and_ci(results):
    unseen = _unseen(results[True])
    assert unseen["macro_f1"]["n"] == 2 and unseen["macro_f1"]["ci95"] is not None
    emb, hier = synthetic(True)
    again = conditions.run_probe(emb, hier, ProbeOptions(**{**CFG, "seeds": [0]}), projector.euclidean_space())
    first = results[True]["conditions"][0]["seeds"][0]
    assert again["conditions"][0]["seeds"][0]["metrics"] == first["metrics"]  # deterministic per seed


def test_mismatched_inputs_are_rejected():
    emb, hier = synthetic(True)
    bad = conditions.ProbeEmbeddings(emb.features[:-1], emb.image_leaf, emb.keys, emb.concept_emb)
    with pytest.raises(ValueError, match="must match"):
        conditions.run_probe(bad, hier, ProbeOptions(**CFG), projector.euclidean_space())
    bad = conditions.ProbeEmbeddings(emb.features, emb.image_leaf, emb.keys, emb.concept_emb[:-1])
    with pytest.raises(ValueError, match="concept embeddings"):
        conditions.run_probe(bad, hier, ProbeOptions(**CFG), projector.euclidean_space())


def test_train_projector_learns_a_separable_set():
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    text = torch.nn.functional.normalize(torch.randn(2, 8), dim=-1)
    answer = (x[:, 0] > 0).numpy().astype(np.int8)  # Yes iff the first feature is positive
    qs = protocol.Questions(np.arange(64), np.zeros(64, dtype=int), np.ones(64, dtype=bool), answer)
    cfg = ProbeOptions(epochs=30, batch_size=16, lr=1e-2)
    proj, history = projector.train_projector(x, text, qs, projector.euclidean_space(), cfg, seed=0)
    preds = projector.predict(proj, x, text, qs, projector.euclidean_space())
    assert np.mean(preds == answer) > 0.9
    assert history["steps"] == 30 * 4
