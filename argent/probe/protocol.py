"""The probe's protocol: concepts (leaves, hypernyms), questions, the per-class split, the
counterfactual shuffles and the ablations. Pure functions of the hierarchy and a seed; docs/probe.md
states each rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PROTOCOL = "taxgen_probe"
SCHEMA_VERSION = 1
NO, YES = 0, 1
TRAIN, VAL, TEST = 0, 1, 2
SPLITS = ("leaf", "seen", "unseen", "hypernym")
HYPERNYM_SPLITS = ("seen", "unseen", "hypernym")
# Independent random streams per seed, so that e.g. adding a shuffle does not move the split.
STREAM_SPLIT, STREAM_QUESTIONS, STREAM_SHUFFLE, STREAM_ABLATION = 0, 1, 2, 3


# ---- concepts: leaves and hypernyms ---------------------------------------------------------


@dataclass(frozen=True)
class Hierarchy:
    """Leaf classes and the hypernyms asked about.

    ``leaves``: class ids, sorted. ``hypernyms``: the asked hypernyms, sorted. ``members[h]``: the
    leaves under h (sorted). ``ancestors[l]``: the asked hypernyms of leaf l (sorted). ``trivial``:
    hypernyms above every leaf (always Yes), not asked.
    """

    leaves: tuple[str, ...]
    hypernyms: tuple[str, ...]
    members: Mapping[str, tuple[str, ...]]
    ancestors: Mapping[str, tuple[str, ...]]
    trivial: tuple[str, ...] = ()

    @property
    def concepts(self) -> tuple[str, ...]:
        """Leaves then hypernyms: the concept index of every question."""
        return self.leaves + self.hypernyms

    def hypernym_set(self, leaf: str) -> frozenset[str]:
        return frozenset(self.ancestors[leaf])


def hierarchy_from_sets(leaf_hypernyms: Mapping[str, Iterable[str]]) -> Hierarchy:
    """From {leaf: its hypernyms} (several per leaf allowed, as THINGS); hypernyms of every leaf are dropped."""
    if len(leaf_hypernyms) < 2:
        raise ValueError(f"probe: need at least 2 leaf classes, got {len(leaf_hypernyms)}")
    sets = {str(leaf): frozenset(map(str, hyps)) for leaf, hyps in leaf_hypernyms.items()}
    clash = sorted(set(sets) & set().union(*sets.values()))
    if clash:
        raise ValueError(f"probe: class(es) {clash[:5]} are also hypernyms of other classes; classes must be leaves")
    everywhere = frozenset.intersection(*sets.values())
    members: dict[str, list[str]] = {}
    for leaf in sorted(sets):
        for h in sets[leaf] - everywhere:
            members.setdefault(h, []).append(leaf)
    hypernyms = tuple(sorted(members))
    return Hierarchy(
        leaves=tuple(sorted(sets)),
        hypernyms=hypernyms,
        members={h: tuple(members[h]) for h in hypernyms},
        ancestors={leaf: tuple(sorted(sets[leaf] - everywhere)) for leaf in sorted(sets)},
        trivial=tuple(sorted(everywhere)),
    )


def hierarchy_from_taxonomy(taxonomy: Any, class_ids: Sequence[str], where: str = "taxonomy") -> Hierarchy:
    """Hypernyms = ancestors (``Taxonomy.ancestors``) of the class ids; errors name ``where``."""
    missing = [c for c in class_ids if c not in taxonomy]
    if missing:
        raise ValueError(
            f"{where}: class id(s) {missing[:5]} are not in the taxonomy; "
            "the class folders must be named by taxonomy ids"
        )
    return hierarchy_from_sets({c: taxonomy.ancestors(c) for c in class_ids})


def article(name: str) -> str:
    """'an' before a written vowel, else 'a' (spelling rule; good enough for WordNet/THINGS nouns)."""
    return "an" if name[:1].lower() in "aeiou" else "a"


def question_text(name: str) -> str:
    return f"Is there {article(name)} {name} in the image?"


# ---- split, questions, shuffles --------------------------------------------------------------


def split_images(
    keys: Sequence[str], labels: Sequence[str], seed: int, train: float = 0.7, val: float = 0.05
) -> np.ndarray:
    """Per-class split: (N,) keys and labels -> (N,) codes TRAIN/VAL/TEST.

    Within a class the keys are sorted (so the input order does not matter), permuted with
    ``seed``, and cut at round-half-up(train·n) and round-half-up((train + val)·n).
    """
    if len(keys) != len(labels):
        raise ValueError(f"split_images: {len(keys)} keys but {len(labels)} labels")
    rng = np.random.default_rng([seed, STREAM_SPLIT])
    by_class: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        by_class.setdefault(label, []).append(i)
    codes = np.full(len(keys), TEST, dtype=np.int8)
    for label in sorted(by_class):
        idx = sorted(by_class[label], key=lambda i: keys[i])
        order = [idx[j] for j in rng.permutation(len(idx))]
        n = len(order)
        cut_train = math.floor(train * n + 0.5)
        cut_val = math.floor((train + val) * n + 0.5)
        codes[order[:cut_train]] = TRAIN
        codes[order[cut_train:cut_val]] = VAL
    return codes


@dataclass(frozen=True)
class Questions:
    """(Q,) arrays: ``image`` index, ``concept`` index into ``Hierarchy.concepts``, ``hypernym`` flag,
    ``answer`` (1 Yes, 0 No)."""

    image: np.ndarray
    concept: np.ndarray
    hypernym: np.ndarray
    answer: np.ndarray

    def __len__(self) -> int:
        return len(self.image)

    def subset(self, mask: np.ndarray) -> Questions:
        return Questions(self.image[mask], self.concept[mask], self.hypernym[mask], self.answer[mask])


def build_questions(image_leaf: Sequence[str], hierarchy: Hierarchy, rng: np.random.Generator) -> Questions:
    """Per image (leaf l): l Yes; another leaf No; each hypernym of l Yes; one non-ancestor hypernym No."""
    if len(image_leaf) == 0:
        raise ValueError("probe: no image to ask about")
    index = {c: i for i, c in enumerate(hierarchy.concepts)}
    n_leaves = len(hierarchy.leaves)
    rows: list[tuple[int, int, bool, int]] = []
    for i, leaf in enumerate(image_leaf):
        own = index[leaf]
        rows.append((i, own, False, YES))
        if n_leaves > 1:
            other = int(rng.integers(n_leaves - 1))
            rows.append((i, other + (other >= own), False, NO))  # uniform over the other leaves
        ancestors = hierarchy.ancestors[leaf]
        rows.extend((i, index[h], True, YES) for h in ancestors)
        others = [h for h in hierarchy.hypernyms if h not in ancestors]
        if others:
            rows.append((i, index[others[int(rng.integers(len(others)))]], True, NO))
    image, concept, hyper, answer = zip(*rows)
    return Questions(np.array(image), np.array(concept), np.array(hyper, dtype=bool), np.array(answer, dtype=np.int8))


def across_shuffle(leaves: Sequence[str], rng: np.random.Generator) -> dict[str, str]:
    """One global random permutation π of the leaf labels: {old: new}."""
    order = rng.permutation(len(leaves))
    return {leaf: leaves[j] for leaf, j in zip(leaves, order)}


def within_groups(hierarchy: Hierarchy) -> tuple[list[tuple[str, ...]], list[str]]:
    """Groups of leaves sharing the exact hypernym set, singletons merged (docs/probe.md).

    Returns (groups of ≥ 2 leaves, sorted; leaves left alone because no group could take them).
    """
    by_set: dict[frozenset[str], list[str]] = {}
    for leaf in hierarchy.leaves:
        by_set.setdefault(hierarchy.hypernym_set(leaf), []).append(leaf)
    groups = {s: list(ls) for s, ls in by_set.items() if len(ls) >= 2}
    alone: list[str] = []
    for s, ls in sorted(by_set.items(), key=lambda item: item[1]):
        if len(ls) >= 2:
            continue
        # The nearest more general category: the largest strict subset; ties -> the bigger group, then
        # the group whose first leaf sorts first (max keeps the first of equal keys).
        candidates = sorted((t for t in by_set if t < s and len(by_set[t]) >= 2), key=lambda t: min(by_set[t]))
        if not candidates:
            alone.extend(ls)
            continue
        target = max(candidates, key=lambda t: (len(t), len(by_set[t])))
        groups[target].extend(ls)
    return sorted(tuple(sorted(g)) for g in groups.values()), alone


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of range(n) without fixed points (rejection; n ≥ 2)."""
    if n < 2:
        raise ValueError(f"derangement: needs n >= 2, got {n}")
    while True:  # accepted with probability ≈ 1/e
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def within_shuffle(hierarchy: Hierarchy, rng: np.random.Generator) -> dict[str, str]:
    """A derangement inside every ``within_groups`` group: {old: new}; lone leaves map to themselves."""
    groups, _ = within_groups(hierarchy)
    mapping = {leaf: leaf for leaf in hierarchy.leaves}
    for group in groups:
        perm = derangement(len(group), rng)
        mapping.update({leaf: group[j] for leaf, j in zip(group, perm)})
    return mapping


# ---- ablations ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ablation:
    """What training does not see. ``kind``: full | random | systematic | leaf_only; ``level`` in percent."""

    kind: str
    level: float
    removed_leaves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # random: per hypernym
    removed_hypernyms: tuple[str, ...] = ()  # systematic

    @property
    def name(self) -> str:
        return condition_name(self.kind, self.level)

    def removed_leaf_set(self) -> frozenset[str]:
        return frozenset(leaf for leaves in self.removed_leaves.values() for leaf in leaves)


def condition_name(kind: str, level: float) -> str:
    """full | leaf_only | random-50 | systematic-12.5"""
    if kind in ("full", "leaf_only"):
        return kind
    return f"{kind}-{int(level) if float(level).is_integer() else f'{level:g}'}"


def n_removed(level: float, n: int) -> int:
    """How many of ``n`` items a ``level`` % ablation removes: 0 at 0 %, else max(1, ⌊level·n/100⌋)."""
    if level <= 0 or n == 0:
        return 0
    # round() first: 70 % of 10 is 7.000000000000001 or 6.999999999999999 in floating point.
    return min(n, max(1, math.floor(round(level * n / 100.0, 9))))


def kind_for(level: float, kind: str) -> str:
    return "full" if level <= 0 else "leaf_only" if level >= 100 else kind


def random_ablation(hierarchy: Hierarchy, level: float, rng: np.random.Generator) -> Ablation:
    """Per hypernym (sorted), the first n_removed(level, |leaves|) of one random order of its leaves.

    Pass a generator seeded only by the probe seed, so draws are nested across levels.
    """
    kind = kind_for(level, "random")
    removed = {}
    for h in hierarchy.hypernyms:
        leaves = hierarchy.members[h]
        order = rng.permutation(len(leaves))  # drawn for every h, so levels share one draw
        removed[h] = tuple(sorted(leaves[j] for j in order[: n_removed(level, len(leaves))]))
    if kind != "random":
        removed = {}
    return Ablation(kind, float(level), removed_leaves=removed)


def systematic_ablation(hierarchy: Hierarchy, level: float, rng: np.random.Generator) -> Ablation:
    """The first n_removed(level, |H|) hypernyms of one random order of all hypernyms."""
    kind = kind_for(level, "systematic")
    order = rng.permutation(len(hierarchy.hypernyms))
    removed = tuple(sorted(hierarchy.hypernyms[j] for j in order[: n_removed(level, len(hierarchy.hypernyms))]))
    return Ablation(kind, float(level), removed_hypernyms=removed if kind == "systematic" else ())


def held_out(questions: Questions, image_leaf: Sequence[str], hierarchy: Hierarchy, ablation: Ablation) -> np.ndarray:
    """(Q,) bool: the questions the ablation withholds from training (on any image; leaf questions never)."""
    if ablation.kind == "full":
        return np.zeros(len(questions), dtype=bool)
    if ablation.kind == "leaf_only":
        return questions.hypernym.copy()
    if ablation.kind == "random":
        removed = ablation.removed_leaf_set()
        on_removed = np.array([image_leaf[i] in removed for i in questions.image], dtype=bool)
        return questions.hypernym & on_removed
    if ablation.kind == "systematic":
        concepts = hierarchy.concepts
        removed_h = set(ablation.removed_hypernyms)
        about_removed = np.array([concepts[c] in removed_h for c in questions.concept], dtype=bool)
        return questions.hypernym & about_removed
    raise ValueError(f"ablation kind {ablation.kind!r} unknown")

