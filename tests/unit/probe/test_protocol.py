"""TaxGen probe protocol (argent.probe): concepts, questions, split, ablations, shuffles, metrics.

Counts are worked out by hand on a 7-leaf taxonomy:

    root ─ A ─ A1 ─ a1, a2          hypernyms asked: A, A1, B (root is above every leaf: not asked)
         │    └ a3                  ancestors: a1, a2 -> {A, A1}; a3 -> {A}; b1, b2 -> {B}; c, d -> {}
         ├ B ─ b1, b2
         ├ c
         └ d
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import f1_score

from argent.config import ConfigError
from argent.data.hiershapes.wordnet_subtree import SHIPPED_TAXONOMY
from argent.data.taxonomy import Taxonomy
from argent.probe import conditions, metrics, protocol
from argent.probe import run as probe_run
from argent.probe.config import ProbeOptions, load_probe_section
from argent.probe.protocol import (
    NO,
    TEST,
    TRAIN,
    VAL,
    YES,
    Ablation,
    Questions,
    build_questions,
    held_out,
    hierarchy_from_sets,
    hierarchy_from_taxonomy,
    n_removed,
    random_ablation,
    split_images,
    systematic_ablation,
)
from tests.fixtures import ROOT

EDGES = [("root", "A"), ("root", "B"), ("root", "c"), ("root", "d"), ("A", "A1"), ("A", "a3"),
         ("A1", "a1"), ("A1", "a2"), ("B", "b1"), ("B", "b2")]
PER_LEAF = 10


@pytest.fixture(scope="module")
def hier():
    leaves = ["a1", "a2", "a3", "b1", "b2", "c", "d"]
    return hierarchy_from_taxonomy(Taxonomy.from_edges(EDGES), leaves)


@pytest.fixture(scope="module")
def images(hier):
    return [leaf for leaf in hier.leaves for _ in range(PER_LEAF)]


@pytest.fixture(scope="module")
def questions(hier, images):
    return build_questions(images, hier, np.random.default_rng(0))


def _rows(questions: Questions, hier, images):
    """The questions as plain tuples (leaf of the image, concept id, is hypernym, answer)."""
    concepts = hier.concepts
    return [(images[i], concepts[c], bool(h), int(a))
            for i, c, h, a in zip(questions.image, questions.concept, questions.hypernym, questions.answer)]


# ---------------------------------------------------------------- concepts
def test_hierarchy_from_taxonomy(hier):
    assert hier.leaves == ("a1", "a2", "a3", "b1", "b2", "c", "d")
    assert hier.hypernyms == ("A", "A1", "B")
    assert hier.trivial == ("root",)
    assert dict(hier.members) == {"A": ("a1", "a2", "a3"), "A1": ("a1", "a2"), "B": ("b1", "b2")}
    assert dict(hier.ancestors) == {"a1": ("A", "A1"), "a2": ("A", "A1"), "a3": ("A",), "b1": ("B",),
                                    "b2": ("B",), "c": (), "d": ()}


def test_hierarchy_errors():
    tree = Taxonomy.from_edges(EDGES)
    with pytest.raises(ValueError, match="not in the taxonomy"):
        hierarchy_from_taxonomy(tree, ["a1", "zz"])
    with pytest.raises(ValueError, match="must be leaves"):
        hierarchy_from_taxonomy(tree, ["a1", "A1"])


def test_question_text():
    assert protocol.question_text("octagon") == "Is there an octagon in the image?"
    assert protocol.question_text("plane figure") == "Is there a plane figure in the image?"


# ---------------------------------------------------------------- questions
def test_question_counts_by_hand(hier, images, questions):
    rows = _rows(questions, hier, images)
    kinds = Counter((hyp, ans) for _, _, hyp, ans in rows)
    # leaf: one Yes and one No per image; hypernym Yes: 2 per a1/a2 image, 1 per a3/b1/b2 image; one No each.
    assert kinds == {(False, YES): 70, (False, NO): 70, (True, YES): 20 + 20 + 10 + 10 + 10, (True, NO): 70}
    for leaf, concept, hyp, ans in rows:
        if not hyp:
            assert (concept == leaf) == (ans == YES)
        else:
            assert (concept in hier.ancestors[leaf]) == (ans == YES)
    # a1/a2 have one non-ancestor hypernym only: their No question is always about B.
    assert Counter(c for leaf, c, hyp, ans in rows if hyp and ans == NO and leaf in ("a1", "a2")) == {"B": 20}
    # The other-leaf No is spread over the other leaves, never the image's own.
    others = Counter(c for leaf, c, hyp, ans in rows if not hyp and ans == NO and leaf == "c")
    assert "c" not in others and set(others) <= set(hier.leaves)


# ---------------------------------------------------------------- split
def test_split_per_class_sorted_and_seeded():
    keys = [f"{k:03d}.jpg" for k in range(20)] * 3
    labels = ["x"] * 20 + ["y"] * 20 + ["z"] * 20
    codes = split_images(keys, labels, seed=42)
    for label in "xyz":
        mine = codes[[i for i, lab in enumerate(labels) if lab == label]]
        assert Counter(mine.tolist()) == {TRAIN: 14, VAL: 1, TEST: 5}
    # Input order does not matter (keys are sorted first) ...
    order = np.random.default_rng(1).permutation(60)
    shuffled = split_images([keys[i] for i in order], [labels[i] for i in order], seed=42)
    assert np.array_equal(shuffled, codes[order])
    # ... the seed does.
    assert not np.array_equal(split_images(keys, labels, seed=7), codes)
    # 10 images: cuts round half up at 7 and 7.5 -> 8.
    small = split_images([str(i) for i in range(10)], ["x"] * 10, seed=0)
    assert Counter(small.tolist()) == {TRAIN: 7, VAL: 1, TEST: 2}


# ---------------------------------------------------------------- ablations
@pytest.mark.parametrize("level,n,expected", [(0, 3, 0), (10, 3, 1), (50, 3, 1), (50, 2, 1), (70, 3, 2), (70, 10, 7),
                                              (90, 3, 2), (100, 3, 3), (30, 10, 3), (50, 1, 1)])
def test_n_removed(level, n, expected):
    assert n_removed(level, n) == expected


def test_random_ablation_draws(hier):
    expected = {10: {"A": 1, "A1": 1, "B": 1}, 50: {"A": 1, "A1": 1, "B": 1}, 70: {"A": 2, "A1": 1, "B": 1},
                90: {"A": 2, "A1": 1, "B": 1}}
    previous = None
    for level, counts in expected.items():
        ab = random_ablation(hier, level, np.random.default_rng([3, 3]))
        assert ab.kind == "random"
        assert {h: len(v) for h, v in ab.removed_leaves.items()} == counts
        for h, leaves in ab.removed_leaves.items():
            assert set(leaves) <= set(hier.members[h])
        if previous is not None:  # nested: what 50 % removes, 70 % removes too
            for h in hier.hypernyms:
                assert set(previous.removed_leaves[h]) <= set(ab.removed_leaves[h])
        previous = ab
    assert random_ablation(hier, 0, np.random.default_rng(0)).kind == "full"
    assert random_ablation(hier, 100, np.random.default_rng(0)).kind == "leaf_only"


def test_random_ablation_removes_exactly_the_questions_of_removed_leaves(hier, images, questions):
    ab = Ablation("random", 50, removed_leaves={"A": ("a3",), "A1": ("a1",), "B": ("b2",)})
    withheld = held_out(questions, images, hier, ab)
    rows = _rows(questions, hier, images)
    gone = Counter((leaf, ans) for (leaf, _, _, ans), w in zip(rows, withheld) if w)
    # a3: 1 Yes (A) + 1 No; a1: 2 Yes (A, A1) + 1 No; b2: 1 Yes (B) + 1 No — per image, 10 images each.
    assert gone == {("a3", YES): 10, ("a3", NO): 10, ("a1", YES): 20, ("a1", NO): 10, ("b2", YES): 10, ("b2", NO): 10}
    assert not withheld[~questions.hypernym].any()  # leaf questions always stay
    assert withheld.sum() == 70


def test_systematic_ablation_removes_every_question_about_the_hypernym(hier, images, questions):
    ab = Ablation("systematic", 34, removed_hypernyms=("A1",))
    withheld = held_out(questions, images, hier, ab)
    rows = _rows(questions, hier, images)
    about_a1 = [r for r in rows if r[1] == "A1"]
    assert sum(1 for r in about_a1 if r[3] == YES) == 20  # every a1 and a2 image
    n_no = sum(1 for r in about_a1 if r[3] == NO)
    assert n_no > 0
    assert withheld.sum() == 20 + n_no
    assert all(rows[i][1] == "A1" for i in np.flatnonzero(withheld))
    # The draw: ⌊34 %·3⌋ = 1, ⌊67 %·3⌋ = 2 hypernyms, nested; 100 % = leaf-only.
    one = systematic_ablation(hier, 34, np.random.default_rng([5, 3]))
    two = systematic_ablation(hier, 67, np.random.default_rng([5, 3]))
    assert len(one.removed_hypernyms) == 1 and len(two.removed_hypernyms) == 2
    assert set(one.removed_hypernyms) <= set(two.removed_hypernyms)
    assert systematic_ablation(hier, 100, np.random.default_rng(0)).kind == "leaf_only"


def test_full_and_leaf_only(hier, images, questions):
    assert held_out(questions, images, hier, Ablation("full", 0)).sum() == 0
    leaf_only = held_out(questions, images, hier, Ablation("leaf_only", 100))
    # every hypernym question (140), including the No questions on c and d, which belong to no hypernym
    assert leaf_only.sum() == 140 and np.array_equal(leaf_only, questions.hypernym)


def test_conditions_deduplicate_endpoints():
    cfg = ProbeOptions(levels=[0, 50, 100], shuffles=["none", "across"], shuffle_levels=[100])
    assert conditions._conditions(cfg) == [
        ("none", "full", 0.0), ("none", "random", 50.0), ("none", "leaf_only", 100.0),
        ("none", "systematic", 50.0), ("across", "leaf_only", 100.0),
    ]


# ---------------------------------------------------------------- shuffles
def _hypernym_sets(questions: Questions, hier, n_images: int) -> list[frozenset[str]]:
    sets: list[set[str]] = [set() for _ in range(n_images)]
    for i, c, h, a in zip(questions.image, questions.concept, questions.hypernym, questions.answer):
        if h and a == YES:
            sets[i].add(hier.concepts[c])
    return [frozenset(s) for s in sets]


def test_across_shuffle(hier, images):
    mapping = protocol.across_shuffle(hier.leaves, np.random.default_rng([42, 2]))
    assert sorted(mapping) == sorted(mapping.values()) == list(hier.leaves)  # a permutation
    assert any(k != v for k, v in mapping.items())  # the mapping changes
    relabelled = [mapping[leaf] for leaf in images]
    assert sorted(Counter(relabelled).values()) == sorted(Counter(images).values())
    # Images inherit the new leaf's hypernyms.
    qs = build_questions(relabelled, hier, np.random.default_rng(0))
    for i, s in enumerate(_hypernym_sets(qs, hier, len(images))):
        assert s == set(hier.ancestors[mapping[images[i]]])


def test_within_groups_by_hand(hier):
    groups, alone = protocol.within_groups(hier)
    # a3 ({A}) is a singleton: merged into the largest strict-subset group, {} = (c, d).
    assert groups == [("a1", "a2"), ("a3", "c", "d"), ("b1", "b2")]
    assert alone == []
    lonely = hierarchy_from_sets({"x": {"H"}, "y": {"H"}, "z": {"G"}})
    assert protocol.within_groups(lonely) == ([("x", "y")], ["z"])


def test_within_groups_on_hiershapes_taxonomy():
    rows = [line.split("\t") for line in SHIPPED_TAXONOMY.read_text().splitlines()
            if line and not line.startswith("#")][1:]
    edges = [(r[1], r[0]) for r in rows if r[4] in ("node", "class")]
    classes = [r[0] for r in rows if r[4] == "class"]
    name = {r[0]: r[3] for r in rows}
    groups, alone = protocol.within_groups(hierarchy_from_taxonomy(Taxonomy.from_edges(edges), classes))
    named = sorted(sorted(name[x] for x in g) for g in groups)
    # circle ({conic section, ellipse}) joins the no-hypernym group; square ({polygon, isogon, regular
    # polygon}) and trapezoid ({polygon, quadrilateral}) join the {polygon} group.
    assert named == [["circle", "heart", "semicircle", "star"],
                     ["hexagon", "octagon", "pentagon", "square", "trapezoid", "triangle"],
                     ["rectangle", "rhombus"]]
    assert alone == []


def test_within_shuffle(hier, images):
    mapping = protocol.within_shuffle(hier, np.random.default_rng([42, 2]))
    groups, _ = protocol.within_groups(hier)
    for group in groups:
        assert sorted(mapping[x] for x in group) == list(group)  # a permutation inside the group
        assert all(mapping[x] != x for x in group)  # a derangement
    relabelled = [mapping[leaf] for leaf in images]
    assert Counter(relabelled) == Counter(images)  # balanced classes: every count kept
    qs = build_questions(relabelled, hier, np.random.default_rng(0))
    sets = _hypernym_sets(qs, hier, len(images))
    for i, leaf in enumerate(images):
        if leaf in ("a1", "a2", "b1", "b2"):  # unmerged groups: the exact hypernym set is kept
            assert sets[i] == set(hier.ancestors[leaf])
        else:  # merged group (a3, c, d): only its common set ({}) is guaranteed
            assert sets[i] <= {"A"}


def test_derangement_has_no_fixed_point():
    rng = np.random.default_rng(0)
    for n in (2, 3, 7):
        for _ in range(20):
            p = protocol.derangement(n, rng)
            assert sorted(p) == list(range(n)) and not np.any(p == np.arange(n))


# ---------------------------------------------------------------- metrics
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


# ---------------------------------------------------------------- config and names


def test_config_check():
    for bad in (dict(ablations=["sideways"]), dict(levels=[120]), dict(seeds=[]),
                dict(train_fraction=0.99, val_fraction=0.05), dict(image_features="pixels"), dict(batch_size=0),
                dict(warmup=1.0), dict(lr=0.0)):
        with pytest.raises(ConfigError):
            ProbeOptions(**bad)


@pytest.mark.parametrize("section, message", [
    ("options: {learning_rate: 0.1}", "probe.options: unknown key(s) ['learning_rate']; allowed: ['seeds', 'ablations'"),
    ("colour: red", "probe: unknown key(s) ['colour']; allowed: ['enabled', 'variants', 'seeds', 'sizes', 'data', 'options']"),
    ("options: {epochs: five}", "probe.options.epochs: expected an integer, got 'five'"),
    ("options: {lr: fast}", "probe.options.lr: expected a number, got 'fast'"),
    ("options: {ablations: [sideways]}", "probe.options.ablations[0]: 'sideways' is not allowed; allowed: ['random', 'systematic']"),
    ("options: {levels: [0, 120]}", "probe.options.levels: [120.0] outside [0, 100]"),
    ("options: {batch_size: 0}", "probe.options.batch_size: must be >= 1, got 0"),
])
def test_config_errors_name_the_key(tmp_path: Path, section: str, message: str):
    path = tmp_path / "config.yaml"
    path.write_text(f"probe:\n  {section}\n")
    with pytest.raises(ConfigError) as err:
        load_probe_section(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_config_from_file_and_overrides(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text("probe:\n  data: imgs\n  options:\n    seeds: [1, 2]\n    levels: [0, 50]\n    epochs: 3\n"
                    "tune: {x: 1}\n")
    section = load_probe_section(path, ["probe.options.epochs=2", "probe.options.lr=2e-3"])
    opts = section.options
    assert section.data == "imgs" and opts.seeds == [1, 2] and opts.levels == [0.0, 50.0]
    assert opts.epochs == 2 and opts.lr == 2e-3  # --set wins over the file
    assert opts.batch_size == 16 and opts.warmup == 0.03 and opts.grad_clip == 1.0  # defaults fill the rest
    assert load_probe_section(None).options == ProbeOptions()
    with pytest.raises(ConfigError, match=r"probe\.<key>"):
        load_probe_section(path, ["train.steps=3"])  # the probe reads no other section: refused, not ignored
    with pytest.raises(ConfigError, match="probe.options.epochs: expected an integer"):
        load_probe_section(path, ["probe.options.epochs=x"])
    for name in ("config.yaml", "smoke.yaml", "paper.yaml"):  # the shipped configs parse
        load_probe_section(ROOT / "config" / name)


def test_read_concept_names(tmp_path: Path):
    plain = tmp_path / "names.tsv"
    plain.write_text("n1\tsquare\nn2\tregular polygon\n")
    table = tmp_path / "table.tsv"
    table.write_text("# comment\nwnid\tparent\tsynset\tname\tkind\nn3\t-\tx.n.01\tplane figure\tnode\n")
    assert probe_run.read_concept_names(plain) == {"n1": "square", "n2": "regular polygon"}
    assert probe_run.read_concept_names(table) == {"n3": "plane figure"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("n1 square\n")
    with pytest.raises(ValueError, match="bad.tsv:1"):
        probe_run.read_concept_names(bad)


def test_concept_names_resolution(hier, tmp_path: Path):
    leaf_names = {leaf: leaf.upper() for leaf in hier.leaves}
    with pytest.raises(ValueError, match="--names"):
        probe_run._resolve_names(hier, leaf_names, [])  # hypernyms A, A1, B have no name anywhere
    extra = tmp_path / "hyp.tsv"
    extra.write_text("A\tanimal\nA1\tbird\nB\tvehicle\n")
    names = probe_run._resolve_names(hier, leaf_names, [extra])
    assert names["A1"] == "bird" and names["a1"] == "A1"
