"""TaxGen probe protocol (argent.probe): concepts, questions, split, ablations, shuffles (the metrics:
test_metrics.py; the section and the concept names: test_probe_config.py).

Counts are worked out by hand on a 7-leaf taxonomy (tests/fixtures/probe.py):

    root ─ A ─ A1 ─ a1, a2          hypernyms asked: A, A1, B (root is above every leaf: not asked)
         │    └ a3                  ancestors: a1, a2 -> {A, A1}; a3 -> {A}; b1, b2 -> {B}; c, d -> {}
         ├ B ─ b1, b2
         ├ c
         └ d
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from argent.data.hiershapes.wordnet_subtree import SHIPPED_TAXONOMY
from argent.data.taxonomy import Taxonomy
from argent.probe import conditions, protocol
from argent.probe.config import ProbeOptions
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
from tests.fixtures import PROBE_EDGES


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
    tree = Taxonomy.from_edges(PROBE_EDGES)
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
