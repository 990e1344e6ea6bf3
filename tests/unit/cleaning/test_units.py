"""Cleaning building blocks against brute-force or hand computations; scorer construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from argent.cleaning.clean import KeepRule, rival_scores, score_table, select
from argent.cleaning.image_scorers import CheckpointScorer
from argent.cleaning.pool import degree_table, negative_pool, retrieval_degree
from argent.cleaning.scorer_base import ScorerUnavailable, similarity_chunked
from argent.cleaning.scorers import make_scorer, make_verifier
from argent.cleaning.table1 import build_pool, false_negative_table
from argent.cleaning.text_scorer import TextScorer
from argent.config import model_from
from argent.data.formats.hierarcaps import HierarCapsSample
from argent.evaluation import hierarcaps_protocol as protocol
from argent.models import build_model


def test_rival_scores_match_brute_force() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, size=(9, 9)).astype(float)  # small integers: many ties
    r = rival_scores(s)
    for i in range(9):
        others = [j for j in range(9) if j != i]
        best_cap = max(s[i, j] for j in others)
        best_img = max(s[j, i] for j in others)
        assert r["rival_caption_score"][i] == best_cap and r["rival_image_score"][i] == best_img
        assert r["rival_caption"][i] == min(j for j in others if s[i, j] == best_cap)
        assert r["margin"][i] == s[i, i] - max(best_cap, best_img)


def test_select_mutual_top1_then_alignment_rank() -> None:
    alignment = np.array([0.9, 0.5, 0.9, 0.7, 0.95])
    margin = np.array([0.1, 0.2, 0.0, -0.1, 0.3])
    kept, rank, reasons = select(alignment, margin, np.array([True, True, True, False, True]), KeepRule(keep=2))
    # eligible: 0, 1, 4 (2 ties its rival, 3 loses); by alignment: 4, 0, 1
    assert kept.tolist() == [True, False, False, False, True]
    assert rank.tolist() == [2, 3, 0, 0, 1]
    assert reasons == ["kept", "below_keep", "ambiguous_caption", "ambiguous_image", "kept"]


def test_retrieval_degree_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    s = rng.integers(0, 4, size=(12, 12)).astype(float)
    owner = np.arange(12)
    k = 3
    got = retrieval_degree(s, owner, k)
    for m in range(12):
        count = 0
        for j in range(12):
            if j == m:
                continue
            better = sum(1 for c in range(12) if s[j, c] > s[j, m] or (s[j, c] == s[j, m] and c < m))
            count += better < k
        assert got[m] == count


def test_duplicate_captions_are_one_candidate_and_pool_ties_by_row() -> None:
    captions = ["a cat", "a dog", "a cat", "a bird"]
    s = np.array([[1.0, 0.0, 1.0, 0.0],   # equal texts score equally
                  [0.5, 1.0, 0.5, 0.0],
                  [1.0, 0.0, 1.0, 0.0],
                  [0.0, 0.0, 0.0, 1.0]])
    table = degree_table(["a", "b", "c", "d"], [1, 2, 3, 4], captions, s, k=2)
    assert table["caption"].to_list() == ["a cat", "a dog", "a bird"]
    assert table["n_samples"].to_list() == [2, 1, 1]
    # top-2 over (cat, dog, bird), ties by column: image 0 -> cat, dog; 1 -> dog, cat; 2 -> cat, dog;
    # 3 -> bird, cat. Own captions do not count (images 0 and 2 both own "a cat").
    assert table["degree"].to_list() == [2, 2, 0]
    pool = negative_pool(table, 2)
    assert pool.columns == ["caption", "id", "degree"]
    assert pool.rows() == [("a bird", "d", 0), ("a cat", "a", 2)]  # cat and dog tie: row 1 first


def test_table1_hand_computed() -> None:
    chains = [("a", "b", "c", "d"), ("a", "e", "f", "g")]
    texts, chain_ids = build_pool(chains)
    assert texts == ["a", "b", "c", "d", "e", "f", "g"]
    radius = np.array([0.1, 0.2, 0.3, 0.4, 0.2, 0.3, 0.4])
    #                       a    b    c    d    e    f    g
    sim = np.array([[0.3, 0.5, 0.7, 0.8, 0.4, 0.6, 0.9],
                    [0.3, 0.7, 0.8, 0.9, 0.4, 0.5, 0.6]])
    table = false_negative_table(sim, radius, chain_ids, [10, 11], np.eye(2), ks=(0, 1), steps=4)
    # k=0: image 0 retrieves a, b, c, g (P 3/4, R 3/4); image 1 a, b, c, d (P 1/4, R 1/4)
    # k=1: image 0 loses e, f, g -> a, b, c, d (1, 1); image 1 loses b, c, d -> a, e, f, g (1, 1)
    assert table["precision"].to_list() == pytest.approx([50.0, 100.0])
    assert table["recall"].to_list() == pytest.approx([50.0, 100.0])
    assert table["removed"].to_list() == [0.0, 3.0]


def test_table1_never_removes_own_captions_and_skips_same_picture() -> None:
    chains = [("a", "b", "c", "d"), ("a", "b", "c", "x"), ("p", "q", "r", "s")]
    texts, chain_ids = build_pool(chains)
    sim = np.tile(np.linspace(1, 0.1, len(texts)), (3, 1))
    radius = np.linspace(0.1, 1, len(texts))
    image_sim = np.array([[1, 0.9, 0.1], [0.9, 1, 0.1], [0.1, 0.1, 1.0]])
    # samples 0 and 1 show the same picture (image id 7): their chains are one GT, never removed
    table = false_negative_table(sim, radius, chain_ids, [7, 7, 8], image_sim, ks=(1,), steps=5)
    # each image's nearest other *picture* is removed: for samples 0 and 1 that is sample 2's
    # (p, q, r, s); for sample 2 it is picture 7, i.e. both chains (a, b, c, d, x)
    assert table["removed"].to_list() == [pytest.approx((4 + 4 + 5) / 3)]


def sample(i: int, caption: str, image_id: int, path: Path | None = None) -> HierarCapsSample:
    return HierarCapsSample(str(i), ("x", "x y", "x y z", caption), image_id, path)


def test_text_scorer_image_stand_in_excludes_own_caption() -> None:
    seen: list[list[str]] = []

    def encoder(texts: list[str]) -> np.ndarray:
        seen.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    others = {5: ["A cat on a mat.", "a cat on a mat", "Two cats sleeping"], 6: ["A dog."]}
    scorer = TextScorer(others, encoder=encoder)
    s5, s6, s7 = sample(0, "a cat on a MAT", 5), sample(1, "A dog.", 6), sample(2, "a bird", 7)
    assert scorer.proxy_texts(s5) == ["Two cats sleeping"]  # own caption (any case/punctuation) excluded
    assert scorer.image_proxy(s5) == "other_captions:1"
    assert scorer.image_proxy(s6) == "own_caption" and scorer.image_proxy(s7) == "own_caption"
    emb = scorer.embed_images([s5, s6])
    v = np.array([len("Two cats sleeping"), 1.0])
    np.testing.assert_allclose(emb[0], v / np.linalg.norm(v), rtol=1e-6)
    scorer.embed_texts(["Two cats sleeping", "new"])
    assert sum(t == "Two cats sleeping" for batch in seen for t in batch) == 1  # cached


@pytest.mark.parametrize("spec, needle", [
    ("open_clip:ViT-B-32:/nonexistent/open_clip_model.bin", "checkpoint file /nonexistent/open_clip_model.bin not found"),
    ("hf:/nonexistent/clip", "no Hugging Face model in /nonexistent/clip"),
    ("checkpoint:/nonexistent/run", "not a run folder"),
    ("nonsense", "not understood"),
])
def test_absent_weights_give_a_clear_message(spec: str, needle: str) -> None:
    with pytest.raises(ScorerUnavailable, match=needle.replace("(", r"\(")):
        make_scorer(spec)


def test_absent_verifier_gives_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(ScorerUnavailable, match="config.json not found"):
        make_verifier(f"hf:{tmp_path}")


def test_checkpoint_scorer_with_a_tiny_random_model(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build_model(model_from("tiny", {"vision_layers": 1, "text_layers": 1}), "lorentz")
    samples = []
    for i in range(3):
        path = tmp_path / f"{i}.jpg"
        Image.new("RGB", (40, 30), (80 * i, 40, 200 - 60 * i)).save(path)
        samples.append(sample(i, f"caption {i}", i, path))
    scorer = CheckpointScorer(model, batch_size=2)
    images = scorer.embed_images(samples)
    texts = scorer.embed_texts(["caption 0", "caption 1", "caption 2", ""])
    assert images.shape == (3, model.config.embed_dim) and texts.shape == (4, model.config.embed_dim)
    sim = similarity_chunked(scorer, images, texts, chunk=2)
    with torch.no_grad():
        direct = model.similarity(torch.from_numpy(images), torch.from_numpy(texts)).double().numpy()
    np.testing.assert_allclose(sim, direct, rtol=1e-6)
    radius = scorer.text_radius(texts)
    # Lorentz radius = d(O, x) = asinh(sqrt(c) |x|) / sqrt(c)
    c = float(model.curv().detach())
    np.testing.assert_allclose(radius, np.arcsinh(np.sqrt(c) * np.linalg.norm(texts, axis=1)) / np.sqrt(c), rtol=1e-5)


def test_verifier_scores_replace_alignment_but_not_ambiguity() -> None:
    s = np.array([[0.9, 0.1, 0.0, 0.0],
                  [0.2, 0.8, 0.0, 0.0],
                  [0.0, 0.1, 0.7, 0.0],
                  [0.0, 0.0, 0.75, 0.6]])  # image d prefers caption c: d ambiguous, c too
    verifier = np.array([0.3, 0.6, 0.99, 0.999])
    table = score_table(["a", "b", "c", "d"], [1, 2, 3, 4], [1, 2, 3, 4], np.repeat(np.diagonal(s)[:, None], 4, 1), s,
                        KeepRule(keep=1), verifier_scores=verifier)
    assert table["alignment"].to_list() == verifier.tolist()
    # ambiguity still comes from the scorer; among the unambiguous a, b the verifier ranks b first
    assert table["reason"].to_list() == ["below_keep", "kept", "ambiguous_image", "ambiguous_caption"]
    assert table["margin"].to_list() == pytest.approx([0.7, 0.6, -0.05, -0.15])


def test_table1_k0_agrees_with_the_evaluation_protocol() -> None:
    """k = 0 is HierarCaps' original protocol: compare with argent.evaluation's implementation."""
    rng = np.random.default_rng(3)
    chains = [tuple(f"t{rng.integers(0, 40)}" if level < 2 else f"s{i}-{level}" for level in range(4)) for i in range(25)]
    chains = [c if len(set(c)) == 4 else (c[0], c[0] + "x", c[2], c[3]) for c in chains]
    texts, chain_ids = build_pool(chains)
    image = rng.normal(size=(25, 8))
    text = rng.normal(size=(len(texts), 8))
    cos = (image / np.linalg.norm(image, axis=1, keepdims=True)) @ (text / np.linalg.norm(text, axis=1, keepdims=True)).T
    radius = rng.uniform(0.2, 1.5, size=len(texts))
    ours = false_negative_table(cos, radius, chain_ids, list(range(25)), np.eye(25), ks=(0,), steps=50)
    gt_levels = [[{int(chain_ids[i, k])} for k in range(4)] for i in range(25)]
    theirs = protocol.threshold_retrieval(
        torch.from_numpy(image), torch.from_numpy(text), torch.from_numpy(radius), gt_levels,
        lambda x, y: torch.nn.functional.normalize(x, dim=-1) @ torch.nn.functional.normalize(y, dim=-1).T, steps=50)
    assert ours["precision"][0] == pytest.approx(100 * theirs["threshold_precision"], abs=1e-9)
    assert ours["recall"][0] == pytest.approx(100 * theirs["threshold_recall"], abs=1e-9)
