"""Taxonomic-generalisation probe (TaxGen, method.md §6.7), adapted to a frozen dual encoder.

Question: can a read-out trained only on yes/no questions about *leaf* categories answer questions
about their *hypernyms*, and how does that depend on the visual coherence of the hypernym?

Adaptation to a dual encoder (TaxGen freezes a vision encoder and an LM and trains the projector
between them; here both towers of one of our models stay frozen):

- **Image side.** Every image is encoded once. The projector input is ``encode_image(project=False)``
  (``image_features: tangent``, the default): W f before α/exp₀ (Lorentz) or before the L2
  normalisation (CLIP) — a plain Euclidean vector for an MLP, the closest thing our API has to
  TaxGen's encoder tokens. ``image_features: lifted`` uses the embedding itself instead. Features are
  standardised per dimension with the training images' mean and std (per seed), so that one learning
  rate fits models whose W f scales differ.
- **Text side.** Each concept gets one question, "Is there a(n) <name> in the image?", encoded once
  with the text tower into its embedding space (``project=True``: the lifted point).
- **Projector** (the only trained part): a 2-layer GELU MLP (Prismatic's "align" projector) from the
  image feature to a text-tower tangent vector, lifted with the model's own ``lift_text`` (α·v, exp₀ /
  normalisation), so the projected image lives in the text tower's space and is compared with the
  question by the model's ``similarity`` (cosine or −d).
- **Answer.** A learned threshold: logit = exp(log s)·(sim − τ), Yes iff logit > 0, trained with binary
  cross-entropy. τ starts at the mean training similarity and s at 1/std, so the first predictions are
  balanced whatever the geometry (−d for Lorentz is never positive, so τ = 0 would answer No to all).
  A yes/no pair of prompts was not chosen: contrastive text towers encode negation poorly, so "there
  is no X" lands next to "there is an X" and the pair carries little signal.
- **Training**: AdamW (lr 1e-3, wd 0 on the MLP weights, none on s and τ), 3 % linear warm-up then
  cosine to 0 (``argent.engine.optim.lr_factor``), grad-norm clip 1.0, 5 epochs, batch 16 (TaxGen's
  appendix Table 1); everything is ``ProbeConfig``.

Protocol (TaxGen §3 as in method.md §6.7):

- **Concepts.** Leaves = the class folders (taxonomy ids). Hypernyms = every ancestor of some class
  except those above *every* class (hiershapes' shape/figure/plane figure): their answer is always
  Yes, so they admit no No question and no macro-F1.
- **Questions per image** (leaf l): "l?" Yes; one other leaf, uniform, No; every hypernym of l Yes;
  one hypernym that is not an ancestor of l, uniform, No.
- **Split** per class: file names sorted, permuted with the seed, first 70 % train, next 5 % val, the
  rest test (cut points rounded half up).
- **Ablations** (what the projector is *not* trained on; leaf questions always stay):
  random XX %: per hypernym h, remove n = max(1, ⌊XX %·|leaves(h)|⌋) of its leaves at random; every
  hypernym question (Yes or No, any hypernym) on an image of a removed leaf is dropped from training.
  Systematic XX %: remove max(1, ⌊XX %·|H|⌋) whole hypernyms; every question about them is dropped.
  Draws are nested (the leaves/hypernyms removed at 30 % are among those removed at 50 %). 0 % is
  ``full`` (nothing removed); 100 % is ``leaf_only`` (no hypernym question at all; this also covers
  the No questions on leaves that belong to no hypernym, which the per-hypernym rule never reaches).
- **Evaluation splits** on the test (and val) images: ``leaf`` (leaf questions), ``seen`` / ``unseen``
  (hypernym questions whose training counterparts were kept / dropped by the ablation), ``hypernym``
  (both). Metric: macro-F1 over {Yes, No} (sklearn ``f1_score(average="macro", labels=[No, Yes],
  zero_division=0)``), pooled over the split's questions (``macro_f1``) and per hypernym category,
  averaged over categories (``category_mean_macro_f1``, TaxGen's headline). Baselines: always No
  (TaxGen's "majority") and always Yes, scored the same way.
- **Counterfactual shuffles** (relabel whole classes before any question is built; the split stays
  per original class): ``across`` — one global random permutation of the leaf labels (images of X
  become π(X) and inherit π(X)'s hypernyms); ``within`` — a random derangement inside each group of
  leaves sharing the exact hypernym set; a singleton group is merged into the most specific group
  (of ≥ 2 leaves) whose hypernym set is a strict subset of its own, i.e. the nearest more general
  category; a singleton with no such group keeps its label (listed in the JSON).
- **Visual coherence** per category: mean pairwise cosine (strict upper triangle) of the image
  features of the training images of its member leaves (after any shuffle). Cosine of W f equals the
  cosine of the lifted embeddings' space components, so it does not depend on the feature choice.
- **Seeds** (default 42, 218, 7 as TaxGen) drive the split, the question sampling, the ablation
  draws, the shuffles and the projector; summaries are mean ± 95 % CI over seeds, t-based
  (half-width t₀.₉₇₅,ₙ₋₁·s/√n; null for one seed).

``probe_model(model, data_root, ...)`` runs everything for a model object; ``run_probe`` runs it on
precomputed embeddings (tests use synthetic ones); ``main`` is ``argent probe`` (loads a run folder);
``plot_exposure`` draws macro-F1 against the ablation level per model family.

JSON (``argent probe --out``, written atomically): protocol ("taxgen_probe"), schema_version, run,
config_hash, model {geometry, embed_dim, feature_dim, family, size, run_seed}, data {root, taxonomy,
n_images, skipped, leaves {id: name}, hypernyms {id: {name, leaves}}, trivial_hypernyms, questions
{id: text}}, options (``ProbeConfig``), method (text notes), seconds, and conditions: a list of
{name ("random-50/none"), ablation (full | random | systematic | leaf_only), level, shuffle,
summary {val|test: {leaf|seen|unseen|hypernym: null or {metric: {mean, ci95, n, values}}}} with
metrics macro_f1, always_no, always_yes, coin, accuracy (+ category_mean_* for hypernym splits),
per_category {hypernym: {coherence, seen, unseen, hypernym: {mean, ci95, n, values}}},
coherence_mean, coherence_vs_f1 {unseen|hypernym: {pearson, spearman, n_categories}},
[within_groups, unshuffled_leaves], seeds: [{seed, counts, removed_leaves, removed_hypernyms,
training, coherence, metrics {val|test: {split: per-seed scores + per_category}}, [shuffle_mapping]}]}.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from argent.io import atomic_output, atomic_write_json

__all__ = [
    "ProbeConfig",
    "Hierarchy",
    "Questions",
    "Ablation",
    "TextSpace",
    "euclidean_space",
    "model_text_space",
    "ProbeEmbeddings",
    "hierarchy_from_taxonomy",
    "hierarchy_from_sets",
    "question_text",
    "split_images",
    "build_questions",
    "across_shuffle",
    "within_groups",
    "within_shuffle",
    "n_removed",
    "random_ablation",
    "systematic_ablation",
    "held_out",
    "macro_f1",
    "split_metrics",
    "mean_ci",
    "coin_macro_f1",
    "visual_coherence",
    "Projector",
    "train_projector",
    "predict",
    "run_probe",
    "probe_model",
    "read_concept_names",
    "exposure_points",
    "plot_exposure",
    "write_json",
    "main",
]

PROTOCOL = "taxgen_probe"
SCHEMA_VERSION = 1
NO, YES = 0, 1
TRAIN, VAL, TEST = 0, 1, 2
SPLITS = ("leaf", "seen", "unseen", "hypernym")
HYPERNYM_SPLITS = ("seen", "unseen", "hypernym")
ABLATIONS = ("random", "systematic")
SHUFFLES = ("none", "across", "within")
# Independent random streams per seed, so that e.g. adding a shuffle does not move the split.
_STREAM_SPLIT, _STREAM_QUESTIONS, _STREAM_SHUFFLE, _STREAM_ABLATION = 0, 1, 2, 3
SCORING = (
    "learned threshold: logit = exp(log s)·(similarity(lift_text(P(x)), q) − τ); Yes iff logit > 0; "
    "P = 2-layer GELU MLP; similarity = the model's (cosine or −Lorentz distance)"
)
CI_METHOD = "mean ± t-based 95% CI over seeds: half-width t(0.975, n−1)·sd/√n (sd with ddof=1); null when n < 2"


# ================================================================================================
# Configuration
# ================================================================================================


@dataclass
class ProbeConfig:
    """Every probe option (``argent probe --params`` reads a YAML mapping of these fields)."""

    seeds: list[int] = field(default_factory=lambda: [42, 218, 7])
    ablations: list[str] = field(default_factory=lambda: list(ABLATIONS))
    levels: list[float] = field(default_factory=lambda: [0.0, 10.0, 30.0, 50.0, 70.0, 90.0, 100.0])
    shuffles: list[str] = field(default_factory=lambda: list(SHUFFLES))
    shuffle_levels: list[float] = field(default_factory=lambda: [100.0])  # shuffles are run at these levels
    train_fraction: float = 0.7
    val_fraction: float = 0.05
    image_features: str = "tangent"  # "tangent" (encode_image(project=False)) | "lifted"
    hidden: int = 0  # projector width; 0 = the text embedding width (Prismatic: out → out)
    epochs: int = 5
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup: float = 0.03  # fraction of the steps
    grad_clip: float = 1.0
    encode_batch_size: int = 64
    eval_chunk: int = 4096

    def check(self) -> None:
        from argent.config import ConfigError

        if not self.seeds:
            raise ConfigError("probe.seeds: give at least one seed")
        for name, allowed, values in (("ablations", ABLATIONS, self.ablations), ("shuffles", SHUFFLES, self.shuffles)):
            bad = [v for v in values if v not in allowed]
            if bad:
                raise ConfigError(f"probe.{name}: {bad} unknown; allowed: {list(allowed)}")
        for name in ("levels", "shuffle_levels"):
            bad = [v for v in getattr(self, name) if not 0.0 <= v <= 100.0]
            if bad:
                raise ConfigError(f"probe.{name}: {bad} outside [0, 100] (percent)")
        if not self.levels:
            raise ConfigError("probe.levels: give at least one level (percent, 0 = full exposure, 100 = leaf-only)")
        if not (0 < self.train_fraction and 0 <= self.val_fraction and self.train_fraction + self.val_fraction < 1):
            raise ConfigError(
                f"probe: train_fraction {self.train_fraction} + val_fraction {self.val_fraction} "
                "must leave a test share"
            )
        if self.image_features not in ("tangent", "lifted"):
            raise ConfigError(f"probe.image_features: {self.image_features!r}; allowed: ['tangent', 'lifted']")
        for name in ("epochs", "batch_size", "encode_batch_size", "eval_chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(f"probe.{name}: must be >= 1, got {getattr(self, name)}")
        if self.hidden < 0 or self.lr <= 0 or self.weight_decay < 0 or not 0 <= self.warmup < 1 or self.grad_clip <= 0:
            raise ConfigError("probe: need hidden >= 0, lr > 0, weight_decay >= 0, 0 <= warmup < 1, grad_clip > 0")


# ================================================================================================
# Concepts: leaves and hypernyms
# ================================================================================================


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


# ================================================================================================
# Split, questions, shuffles
# ================================================================================================


def split_images(
    keys: Sequence[str], labels: Sequence[str], seed: int, train: float = 0.7, val: float = 0.05
) -> np.ndarray:
    """Per-class split: (N,) keys and labels -> (N,) codes TRAIN/VAL/TEST.

    Within a class the keys are sorted (so the input order does not matter), permuted with
    ``seed``, and cut at round-half-up(train·n) and round-half-up((train + val)·n).
    """
    if len(keys) != len(labels):
        raise ValueError(f"split_images: {len(keys)} keys but {len(labels)} labels")
    rng = np.random.default_rng([seed, _STREAM_SPLIT])
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
    """Groups of leaves sharing the exact hypernym set, singletons merged (see the module docstring).

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


# ================================================================================================
# Ablations
# ================================================================================================


@dataclass(frozen=True)
class Ablation:
    """What training does not see. ``kind``: full | random | systematic | leaf_only; ``level`` in percent."""

    kind: str
    level: float
    removed_leaves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # random: per hypernym
    removed_hypernyms: tuple[str, ...] = ()  # systematic

    @property
    def name(self) -> str:
        return _condition_name(self.kind, self.level)

    def removed_leaf_set(self) -> frozenset[str]:
        return frozenset(leaf for leaves in self.removed_leaves.values() for leaf in leaves)


def _condition_name(kind: str, level: float) -> str:
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


def _kind_for(level: float, kind: str) -> str:
    return "full" if level <= 0 else "leaf_only" if level >= 100 else kind


def random_ablation(hierarchy: Hierarchy, level: float, rng: np.random.Generator) -> Ablation:
    """Per hypernym (sorted), the first n_removed(level, |leaves|) of one random order of its leaves.

    Pass a generator seeded only by the probe seed, so draws are nested across levels.
    """
    kind = _kind_for(level, "random")
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
    kind = _kind_for(level, "systematic")
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


# ================================================================================================
# Metrics
# ================================================================================================


def macro_f1(answers: np.ndarray, predictions: np.ndarray) -> float:
    """Macro-F1 over {No, Yes}; a label with no true and no predicted sample scores 0 (sklearn zero_division=0)."""
    from sklearn.metrics import f1_score

    return float(f1_score(answers, predictions, labels=[NO, YES], average="macro", zero_division=0.0))


def coin_macro_f1(yes_rate: float) -> float:
    """Large-sample macro-F1 of a fair coin on answers with Yes share q: ½·[q/(q + ½) + (1 − q)/(1.5 − q)].

    (Per class: precision = its share, recall = ½.) The input-blind reference: a probe that guesses
    scores this, and on a Yes-heavy split it beats always-No.
    """
    q = float(yes_rate)
    return 0.5 * (q / (q + 0.5) + (1 - q) / (1.5 - q))


def _scores(answers: np.ndarray, predictions: np.ndarray) -> dict[str, float | int]:
    always_no = np.full_like(answers, NO)
    return {
        "macro_f1": macro_f1(answers, predictions),
        "always_no": macro_f1(answers, always_no),
        "always_yes": macro_f1(answers, np.full_like(answers, YES)),
        "coin": coin_macro_f1(float(np.mean(answers == YES))),
        "accuracy": float(np.mean(answers == predictions)),
        "n": int(len(answers)),
        "n_yes": int(np.sum(answers == YES)),
    }


def split_metrics(
    questions: Questions, predictions: np.ndarray, split_masks: Mapping[str, np.ndarray], concepts: Sequence[str]
) -> dict[str, dict[str, Any] | None]:
    """Per split: pooled scores; for hypernym splits also per category and their mean. Empty split -> None."""
    out: dict[str, dict[str, Any] | None] = {}
    for split, mask in split_masks.items():
        if not mask.any():
            out[split] = None
            continue
        answers, preds = questions.answer[mask], predictions[mask]
        entry: dict[str, Any] = _scores(answers, preds)
        if split in HYPERNYM_SPLITS:
            per_category = {}
            sub_concepts = questions.concept[mask]
            for c in np.unique(sub_concepts):
                m = sub_concepts == c
                per_category[concepts[c]] = _scores(answers[m], preds[m])
            entry["per_category"] = per_category
            entry["category_mean_macro_f1"] = float(np.mean([v["macro_f1"] for v in per_category.values()]))
            entry["category_mean_always_no"] = float(np.mean([v["always_no"] for v in per_category.values()]))
            entry["category_mean_always_yes"] = float(np.mean([v["always_yes"] for v in per_category.values()]))
            entry["category_mean_coin"] = float(np.mean([v["coin"] for v in per_category.values()]))
        out[split] = entry
    return out


def mean_ci(values: Iterable[float | None]) -> dict[str, Any]:
    """Mean and t-based 95 % CI half-width over seeds; None entries are skipped."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return {"mean": None, "ci95": None, "n": 0, "values": []}
    mean = float(np.mean(vals))
    ci = None
    if len(vals) >= 2:
        from scipy import stats

        ci = float(stats.t.ppf(0.975, len(vals) - 1) * np.std(vals, ddof=1) / math.sqrt(len(vals)))
    return {"mean": mean, "ci95": ci, "n": len(vals), "values": vals}


def visual_coherence(
    features: Tensor, image_leaf: Sequence[str], mask: np.ndarray, hierarchy: Hierarchy
) -> dict[str, float | None]:
    """Per hypernym: mean pairwise cosine (strict upper triangle) of the masked images of its leaves.

    features (N, D); ``mask`` (N,) bool selects the images (the training split). None with < 2 images.
    """
    unit = torch.nn.functional.normalize(features.double(), dim=-1)
    out: dict[str, float | None] = {}
    for h in hierarchy.hypernyms:
        members = set(hierarchy.members[h])
        idx = [i for i in np.flatnonzero(mask) if image_leaf[i] in members]
        if len(idx) < 2:
            out[h] = None
            continue
        x = unit[idx]
        total = (x.sum(0) @ x.sum(0) - (x * x).sum()) / 2  # Σ_{i<j} cos = (‖Σx‖² − Σ‖x‖²) / 2
        out[h] = float(total / (len(idx) * (len(idx) - 1) / 2))
    return out


# ================================================================================================
# The projector
# ================================================================================================


@dataclass(frozen=True)
class TextSpace:
    """Where the projector lands: ``lift`` (B, D) tangent -> point; ``similarity`` (B1, D), (B2, D) -> (B1, B2)."""

    lift: Callable[[Tensor], Tensor]
    similarity: Callable[[Tensor, Tensor], Tensor]
    geometry: str


def euclidean_space() -> TextSpace:
    """CLIP-like space (unit vectors, cosine), for synthetic embeddings."""
    return TextSpace(lambda v: nn.functional.normalize(v, dim=-1), lambda x, y: x @ y.T, "euclidean")


def model_text_space(model: Any) -> TextSpace:
    """The model's text space: ``lift_text`` and ``similarity`` (cosine or −d)."""
    return TextSpace(model.lift_text, model.similarity, model.geometry)


class Projector(nn.Module):
    """2-layer GELU MLP to the text tower's tangent space, plus the yes/no read-out (scale s, threshold τ)."""

    def __init__(self, d_in: int, d_out: int, hidden: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))
        self.log_scale = nn.Parameter(torch.zeros(()))
        self.threshold = nn.Parameter(torch.zeros(()))

    def embed(self, x: Tensor, space: TextSpace) -> Tensor:
        """(B, d_in) image features -> (B, D) points in the text space."""
        return space.lift(self.mlp(x))

    def logits(self, sims: Tensor) -> Tensor:
        return self.log_scale.exp() * (sims - self.threshold)


def _paired_sims(space: TextSpace, points: Tensor, queries: Tensor) -> Tensor:
    """(B, D), (B, D) -> (B,): the diagonal of the model's pairwise similarity (B is a small batch)."""
    return space.similarity(points, queries).diagonal()


def train_projector(
    features: Tensor,
    concept_emb: Tensor,
    questions: Questions,
    space: TextSpace,
    cfg: ProbeConfig,
    seed: int,
) -> tuple[Projector, dict[str, float]]:
    """Train a fresh projector on ``questions``; features (N, d_in), concept_emb (C, D) on one device."""
    device = features.device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        proj = Projector(features.shape[1], concept_emb.shape[1], cfg.hidden or concept_emb.shape[1]).to(device)
    image = torch.as_tensor(questions.image, device=device)
    concept = torch.as_tensor(questions.concept, device=device)
    target = torch.as_tensor(questions.answer, device=device, dtype=torch.float32)
    n = len(questions)
    if n == 0:
        raise ValueError("probe: no training question (is the training split empty?)")
    with torch.no_grad():  # read-out init: balanced first predictions whatever the geometry
        sims = torch.cat([
            _paired_sims(space, proj.embed(features[image[s : s + 256]], space), concept_emb[concept[s : s + 256]])
            for s in range(0, n, 256)
        ])
        proj.threshold.fill_(sims.mean())
        # clamp: identical starting similarities must not give s = ∞
        proj.log_scale.fill_(-torch.log(sims.std(unbiased=False).clamp(min=1e-3)))
    from argent.engine.optim import lr_factor

    steps_per_epoch = math.ceil(n / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    warmup = math.ceil(cfg.warmup * total)
    decay = [p for p in proj.mlp.parameters() if p.ndim > 1]
    no_decay = [p for p in proj.parameters() if all(p is not d for d in decay)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, warmup, total))
    generator = torch.Generator().manual_seed(seed)
    loss_fn = nn.BCEWithLogitsLoss()
    epoch_loss = float("nan")
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=generator).to(device)
        running = 0.0
        for s in range(0, n, cfg.batch_size):
            b = order[s : s + cfg.batch_size]
            points = proj.embed(features[image[b]], space)
            logits = proj.logits(_paired_sims(space, points, concept_emb[concept[b]]))
            loss = loss_fn(logits, target[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(proj.parameters(), cfg.grad_clip)
            opt.step()
            sched.step()
            running += loss.item() * len(b)
        epoch_loss = running / n
    history = {"final_loss": epoch_loss, "steps": total, "threshold": proj.threshold.item(),
               "scale": proj.log_scale.exp().item()}
    return proj, history


@torch.no_grad()
def predict(
    proj: Projector, features: Tensor, concept_emb: Tensor, questions: Questions, space: TextSpace, chunk: int = 4096
) -> np.ndarray:
    """(Q,) predicted answers (1 Yes / 0 No) for ``questions`` over ``features`` (N, d_in)."""
    out = np.zeros(len(questions), dtype=np.int8)
    if len(questions) == 0:
        return out
    images = np.unique(questions.image)
    row = {int(i): r for r, i in enumerate(images)}
    sims = []
    for s in range(0, len(images), chunk):
        idx = torch.as_tensor(images[s : s + chunk], device=features.device)
        sims.append(space.similarity(proj.embed(features[idx], space), concept_emb).float().cpu())
    table = torch.cat(sims)  # (unique images, C)
    rows = torch.as_tensor([row[int(i)] for i in questions.image])
    chosen = table[rows, torch.as_tensor(questions.concept)]
    return (proj.logits(chosen.to(proj.threshold.device)) > 0).cpu().numpy().astype(np.int8)


# ================================================================================================
# The protocol over precomputed embeddings
# ================================================================================================


@dataclass
class ProbeEmbeddings:
    """Everything the probe needs after encoding.

    features (N, d_in): projector input per image; image_leaf (N,): class id per image; keys (N,):
    file names (the split sorts them); concept_emb (C, D): lifted question embedding per concept in
    ``hierarchy.concepts`` order; names: concept id -> name.
    """

    features: Tensor
    image_leaf: list[str]
    keys: list[str]
    concept_emb: Tensor
    names: dict[str, str] = field(default_factory=dict)


def _conditions(cfg: ProbeConfig) -> list[tuple[str, str, float]]:
    """(shuffle, kind, level) triples, deduplicated (0 % and 100 % are the same for both kinds)."""
    seen: dict[tuple[str, str, float], None] = {}
    for shuffle in cfg.shuffles:
        levels = cfg.levels if shuffle == "none" else cfg.shuffle_levels
        for kind in cfg.ablations:
            for level in levels:
                k = _kind_for(level, kind)
                seen.setdefault((shuffle, k, 0.0 if k == "full" else 100.0 if k == "leaf_only" else float(level)))
    return list(seen)


def _standardise(features: Tensor, train_mask: np.ndarray) -> Tensor:
    train = features[torch.as_tensor(train_mask, device=features.device)]
    # clamp: a constant feature dimension must not divide by 0.
    return (features - train.mean(0)) / train.std(0, unbiased=False).clamp(min=1e-6)


def _relabel(
    image_leaf: Sequence[str], hierarchy: Hierarchy, shuffle: str, seed: int
) -> tuple[list[str], dict[str, str] | None]:
    if shuffle == "none":
        return list(image_leaf), None
    rng = np.random.default_rng([seed, _STREAM_SHUFFLE])
    mapping = across_shuffle(hierarchy.leaves, rng) if shuffle == "across" else within_shuffle(hierarchy, rng)
    return [mapping[leaf] for leaf in image_leaf], mapping


def _split_masks(questions: Questions, split: np.ndarray, which: int, withheld: np.ndarray) -> dict[str, np.ndarray]:
    on = split[questions.image] == which
    hyp = questions.hypernym
    return {
        "leaf": on & ~hyp,
        "seen": on & hyp & ~withheld,
        "unseen": on & hyp & withheld,
        "hypernym": on & hyp,
    }


def _question_counts(questions: Questions, split: np.ndarray, withheld: np.ndarray) -> dict[str, dict[str, int]]:
    train = split[questions.image] == TRAIN
    counts = {
        "train": {
            "leaf": int(np.sum(train & ~questions.hypernym)),
            "hypernym": int(np.sum(train & questions.hypernym & ~withheld)),
            "withheld": int(np.sum(train & withheld)),
        }
    }
    for name, code in (("val", VAL), ("test", TEST)):
        masks = _split_masks(questions, split, code, withheld)
        counts[name] = {s: int(m.sum()) for s, m in masks.items()}
    return counts


def run_probe(
    emb: ProbeEmbeddings,
    hierarchy: Hierarchy,
    cfg: ProbeConfig,
    space: TextSpace,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every (shuffle, ablation, level) condition × seed: train a projector, score val and test.

    Returns {"conditions": [...]} (the JSON's protocol part; see the module docstring and ``main``).
    """
    cfg.check()
    n = len(emb.image_leaf)
    if emb.features.shape[0] != n or len(emb.keys) != n:
        raise ValueError(f"probe: {emb.features.shape[0]} features, {len(emb.keys)} keys, {n} labels; they must match")
    if emb.concept_emb.shape[0] != len(hierarchy.concepts):
        raise ValueError(f"probe: {emb.concept_emb.shape[0]} concept embeddings for {len(hierarchy.concepts)} concepts")
    unknown = sorted(set(emb.image_leaf) - set(hierarchy.leaves))
    if unknown:
        raise ValueError(f"probe: image labels {unknown[:5]} are not leaves of the hierarchy")
    conditions = _conditions(cfg)
    records: dict[tuple[str, str, float], list[dict[str, Any]]] = {c: [] for c in conditions}
    extras: dict[tuple[str, str, float], dict[str, Any]] = {c: {} for c in conditions}
    concepts = hierarchy.concepts
    for shuffle in cfg.shuffles:
        mine = [c for c in conditions if c[0] == shuffle]
        for seed in cfg.seeds:
            split = split_images(emb.keys, emb.image_leaf, seed, cfg.train_fraction, cfg.val_fraction)
            labels, mapping = _relabel(emb.image_leaf, hierarchy, shuffle, seed)
            questions = build_questions(labels, hierarchy, np.random.default_rng([seed, _STREAM_QUESTIONS]))
            features = _standardise(emb.features, split == TRAIN)
            coherence = visual_coherence(emb.features, labels, split == TRAIN, hierarchy)
            for condition in mine:
                _, kind, level = condition
                rng = np.random.default_rng([seed, _STREAM_ABLATION])
                draw = systematic_ablation if kind == "systematic" else random_ablation
                ablation = draw(hierarchy, level, rng)
                withheld = held_out(questions, labels, hierarchy, ablation)
                train_mask = (split[questions.image] == TRAIN) & ~withheld
                train_q = questions.subset(train_mask)
                proj, history = train_projector(features, emb.concept_emb, train_q, space, cfg, seed)
                preds = predict(proj, features, emb.concept_emb, questions, space, cfg.eval_chunk)
                record = {
                    "seed": seed,
                    "counts": _question_counts(questions, split, withheld),
                    "removed_leaves": {h: list(v) for h, v in ablation.removed_leaves.items() if v},
                    "removed_hypernyms": list(ablation.removed_hypernyms),
                    "training": history,
                    "coherence": coherence,
                    "metrics": {
                        name: split_metrics(questions, preds, _split_masks(questions, split, code, withheld), concepts)
                        for name, code in (("val", VAL), ("test", TEST))
                    },
                }
                if mapping is not None:
                    record["shuffle_mapping"] = mapping
                records[condition].append(record)
                if progress:
                    test = record["metrics"]["test"]
                    shown = {s: round(test[s]["macro_f1"], 3) for s in SPLITS if test.get(s)}
                    progress(f"{shuffle}/{ablation.name} seed {seed}: {shown}")
    if "within" in cfg.shuffles:
        groups, alone = within_groups(hierarchy)
        for condition in conditions:
            if condition[0] == "within":
                extras[condition]["within_groups"] = [list(g) for g in groups]
                extras[condition]["unshuffled_leaves"] = alone
    return {
        "conditions": [_summarise(c, records[c], hierarchy, extras[c]) for c in conditions],
    }


def _summarise(
    condition: tuple[str, str, float], seeds: list[dict[str, Any]], hierarchy: Hierarchy, extra: dict
) -> dict[str, Any]:
    shuffle, kind, level = condition
    summary: dict[str, Any] = {}
    for part in ("val", "test"):
        summary[part] = {}
        for split in SPLITS:
            entries = [r["metrics"][part][split] for r in seeds]
            if all(e is None for e in entries):
                summary[part][split] = None
                continue
            keys = ["macro_f1", "always_no", "always_yes", "coin", "accuracy"]
            if split in HYPERNYM_SPLITS:
                keys += ["category_mean_macro_f1", "category_mean_always_no", "category_mean_always_yes",
                         "category_mean_coin"]
            summary[part][split] = {k: mean_ci(e[k] if e else None for e in entries) for k in keys}
    per_category: dict[str, Any] = {}
    for h in hierarchy.hypernyms:
        cat: dict[str, Any] = {"coherence": mean_ci(r["coherence"].get(h) for r in seeds)}
        for split in HYPERNYM_SPLITS:
            vals = []
            for r in seeds:
                e = r["metrics"]["test"][split]
                vals.append(e["per_category"][h]["macro_f1"] if e and h in e["per_category"] else None)
            cat[split] = mean_ci(vals)
        per_category[h] = cat
    seed_means = []
    for r in seeds:
        values = [v for v in r["coherence"].values() if v is not None]
        seed_means.append(float(np.mean(values)) if values else None)
    return {
        "name": f"{_condition_name(kind, level)}/{shuffle}",
        "ablation": kind,
        "level": level,
        "shuffle": shuffle,
        "summary": summary,
        "per_category": per_category,
        "coherence_mean": mean_ci(seed_means),
        "coherence_vs_f1": _coherence_correlation(per_category),
        **extra,
        "seeds": seeds,
    }


def _coherence_correlation(per_category: Mapping[str, Any]) -> dict[str, Any]:
    """Pearson and Spearman correlation over categories of mean coherence vs mean test macro-F1 (per split)."""
    from scipy import stats

    out: dict[str, Any] = {}
    for split in ("unseen", "hypernym"):
        pairs = [
            (c["coherence"]["mean"], c[split]["mean"])
            for c in per_category.values()
            if c["coherence"]["mean"] is not None and c[split]["mean"] is not None
        ]
        if len(pairs) < 3 or len({p[0] for p in pairs}) < 2 or len({p[1] for p in pairs}) < 2:
            out[split] = {"pearson": None, "spearman": None, "n_categories": len(pairs)}
            continue
        x, y = map(np.array, zip(*pairs))
        out[split] = {
            "pearson": float(stats.pearsonr(x, y)[0]),
            "spearman": float(stats.spearmanr(x, y)[0]),
            "n_categories": len(pairs),
        }
    return out


# ================================================================================================
# With a model: read the folder, encode, run
# ================================================================================================


def read_concept_names(path: str | Path) -> dict[str, str]:
    """Names from ``<id>\\t<name>`` lines, or from a table with a header holding ``wnid``/``id`` and ``name``
    columns (e.g. argent/resources/hiershapes_taxonomy.tsv). ``#`` lines are comments."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: names file not found (expected '<id>\\t<name>' lines)")
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.strip() and not line.startswith("#")]
    if not lines:
        raise ValueError(f"{path}: no names")
    head = lines[0][1].split("\t")
    id_col = next((head.index(k) for k in ("wnid", "id") if k in head), None)
    name_col = head.index("name") if "name" in head else None
    if id_col is not None and name_col is not None:
        body, cols = lines[1:], (id_col, name_col)
    else:
        body, cols = lines, (0, 1)
    names: dict[str, str] = {}
    for number, line in body:
        parts = line.split("\t")
        if len(parts) <= max(cols) or not parts[cols[0]].strip() or not parts[cols[1]].strip():
            raise ValueError(f"{path}:{number}: expected an id and a name (tab-separated), got {line!r}")
        names.setdefault(parts[cols[0]].strip(), parts[cols[1]].strip())
    return names


def _resolve_names(
    hierarchy: Hierarchy, class_names: Mapping[str, str], name_files: Sequence[str | Path]
) -> dict[str, str]:
    """Concept names: class_names.tsv, then each ``--names`` file, then the shipped hiershapes table."""
    from argent.data.hiershapes.taxonomy import SHIPPED_TAXONOMY

    names = {k: v for k, v in class_names.items() if v != k}
    for path in name_files:
        for k, v in read_concept_names(path).items():
            names.setdefault(k, v)
    missing = [c for c in hierarchy.concepts if c not in names]
    if missing and SHIPPED_TAXONOMY.is_file():
        shipped = read_concept_names(SHIPPED_TAXONOMY)
        names.update({c: shipped[c] for c in missing if c in shipped})
        missing = [c for c in hierarchy.concepts if c not in names]
    if missing:
        raise ValueError(
            f"probe: no name for concept id(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}; "
            "pass --names FILE with '<id>\\t<name>' lines (the questions need words, not ids)"
        )
    return {c: names[c] for c in hierarchy.concepts}


@contextlib.contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    """Eval mode and no parameter gradients while the probe runs; the caller's flags come back after."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    was_training = model.training
    model.eval()
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)


def probe_model(
    model: Any,
    data_root: str | Path,
    taxonomy: str | Path | None = None,
    names: Sequence[str | Path] = (),
    cfg: ProbeConfig | None = None,
    policy: Any = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The probe for a model object on a labelled image folder; returns the result dict (see ``main``)."""
    from argent.data.formats.imagefolder import read_image_folder
    from argent.data.images import eval_transform
    from argent.data.policy import BadDataPolicy
    from argent.data.taxonomy import Taxonomy
    from argent.evaluation.runner import encode_images, encode_texts

    cfg = cfg or ProbeConfig()
    cfg.check()
    start = time.perf_counter()
    policy = policy or BadDataPolicy("skip")
    data_root = Path(data_root)
    taxonomy_path = Path(taxonomy) if taxonomy else data_root / "taxonomy.txt"
    if not taxonomy_path.is_file():
        raise FileNotFoundError(f"{taxonomy_path}: no taxonomy; pass --taxonomy FILE ('parent child' id lines)")
    data = read_image_folder(data_root, policy=policy)
    tree = Taxonomy.from_edges_file(taxonomy_path)
    hierarchy = hierarchy_from_taxonomy(tree, data.class_ids, where=str(taxonomy_path))
    if not hierarchy.hypernyms:
        raise ValueError(f"{taxonomy_path}: no hypernym below the common ancestors of the classes; nothing to ask")
    concept_names = _resolve_names(hierarchy, dict(zip(data.class_ids, data.class_names)), names)
    texts = [question_text(concept_names[c]) for c in hierarchy.concepts]
    with _frozen(model):
        features, kept = encode_images(
            model, data.paths, eval_transform(model.config.image_size), cfg.encode_batch_size, policy,
            project=cfg.image_features == "lifted",
        )
        policy.require_usable(len(kept), str(data_root))
        concept_emb = encode_texts(model, texts, cfg.encode_batch_size, project=True)
        device = next(model.parameters()).device
        emb = ProbeEmbeddings(
            features=features.to(device),
            image_leaf=[data.class_ids[data.samples[i][1]] for i in kept],
            keys=[data.samples[i][0].name for i in kept],
            concept_emb=concept_emb.to(device),
            names=concept_names,
        )
        result = run_probe(emb, hierarchy, cfg, model_text_space(model), progress=progress)
    return {
        "protocol": PROTOCOL,
        "schema_version": SCHEMA_VERSION,
        "model": {
            "geometry": model.geometry, "embed_dim": int(concept_emb.shape[1]), "feature_dim": int(features.shape[1])
        },
        "data": {
            "root": str(data_root),
            "taxonomy": str(taxonomy_path),
            "n_images": len(kept),
            "skipped": dict(policy.counts),
            "leaves": {c: concept_names[c] for c in hierarchy.leaves},
            "hypernyms": {
                h: {"name": concept_names[h], "leaves": list(hierarchy.members[h])} for h in hierarchy.hypernyms
            },
            "trivial_hypernyms": list(hierarchy.trivial),
            "questions": dict(zip(hierarchy.concepts, texts)),
        },
        "options": dataclasses.asdict(cfg),
        "method": {
            "scoring": SCORING,
            "image_features": "encode_image(project=False) (W f), standardised with the training images' mean/std"
            if cfg.image_features == "tangent" else "encode_image(project=True), standardised",
            "question_embedding": "encode_text(project=True) of 'Is there a(n) <name> in the image?'",
            "ci": CI_METHOD,
            "macro_f1": "sklearn f1_score(labels=[0, 1], average='macro', zero_division=0); category_mean = mean over "
            "hypernym categories with questions in the split",
            "majority_baseline": "always_no (TaxGen's majority baseline); always_yes and coin (large-sample "
            "macro-F1 of a fair coin) are reported beside it",
        },
        **result,
        "seconds": round(time.perf_counter() - start, 2),
    }


# ================================================================================================
# Figure
# ================================================================================================


def _family_label(result: Mapping[str, Any], sizes: set[str]) -> str:
    model = result.get("model", {})
    family = model.get("family") or model.get("geometry", "model")
    return f"{family}-{model['size']}" if len(sizes) > 1 and model.get("size") else family


def exposure_points(
    results: Sequence[Mapping[str, Any]], split: str = "unseen", metric: str = "category_mean_macro_f1"
) -> dict[str, dict[str, dict[float, dict[str, Any]]]]:
    """{family: {ablation kind: {level: mean_ci over every seed of every result of that family}}} (no shuffles).

    ``full`` (0 %) and ``leaf_only`` (100 %) belong to both kinds' curves.
    """
    sizes = {r.get("model", {}).get("size") for r in results} - {None}
    pooled: dict[str, dict[str, dict[float, list[float]]]] = {}
    for result in results:
        family = _family_label(result, sizes)
        for cond in result["conditions"]:
            if cond["shuffle"] != "none":
                continue
            entry = cond["summary"]["test"].get(split)
            if not entry or metric not in entry:
                continue
            kinds = ABLATIONS if cond["ablation"] in ("full", "leaf_only") else (cond["ablation"],)
            for kind in kinds:
                bucket = pooled.setdefault(family, {}).setdefault(kind, {}).setdefault(float(cond["level"]), [])
                bucket.extend(entry[metric]["values"])
    return {
        fam: {kind: {lvl: mean_ci(v) for lvl, v in sorted(levels.items())} for kind, levels in kinds.items()}
        for fam, kinds in pooled.items()
    }


def plot_exposure(
    jsons: Sequence[str | Path | Mapping[str, Any]],
    out_png: str | Path,
    split: str = "unseen",
    metric: str = "category_mean_macro_f1",
) -> Path:
    """Macro-F1 (mean ± 95 % CI) against the ablation level, one line per model family, one panel per
    ablation kind; the always-No baseline dashed. Written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [j if isinstance(j, Mapping) else json.loads(Path(j).read_text()) for j in jsons]
    for j, r in zip(jsons, results):
        if r.get("protocol") != PROTOCOL:
            where = "result" if isinstance(j, Mapping) else str(j)
            raise ValueError(f"{where}: not a probe result (protocol {r.get('protocol')!r}, expected {PROTOCOL!r})")
    points = exposure_points(results, split, metric)
    baseline_metric = "category_mean_always_no" if metric.startswith("category_mean") else "always_no"
    baseline = exposure_points(results, split, baseline_metric)
    fig, axes = plt.subplots(1, len(ABLATIONS), figsize=(5.5 * len(ABLATIONS), 4), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], ABLATIONS):
        for rank, (family, kinds) in enumerate(sorted(points.items())):
            curve = kinds.get(kind, {})
            xs = [x for x, v in curve.items() if v["mean"] is not None]
            if not xs:
                continue
            ys = [curve[x]["mean"] for x in xs]
            err = [curve[x]["ci95"] or 0.0 for x in xs]
            shift = 0.8 * (rank - (len(points) - 1) / 2)  # side by side, so the error bars stay readable
            ax.errorbar([x + shift for x in xs], ys, yerr=err, marker="o", capsize=3, label=family)
        base = {}
        for kinds in baseline.values():
            for x, v in kinds.get(kind, {}).items():
                base.setdefault(x, []).extend(v["values"])
        if base:
            xs = sorted(base)
            ax.plot(xs, [float(np.mean(base[x])) for x in xs], "k--", lw=1, label="always No")
        ax.set_title(f"{kind} ablation")
        ax.set_xlabel("hypernym exposure withheld (%)  [0 = full, 100 = leaf-only]")
        ax.set_xlim(-5, 105)
        ax.set_ylim(0.0, 1.02)  # F1 is in [0, 1]; a few-seed t interval can reach past it
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{metric.replace('_', ' ')} ({split}, test)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_png)
    try:
        with atomic_output(out) as tmp:
            fig.savefig(tmp, dpi=120)
    finally:
        plt.close(fig)
    return out


# ================================================================================================
# CLI
# ================================================================================================

_FLAGS: dict[str, tuple[str, Any, str]] = {  # flag -> (field, type, nargs)
    "--seeds": ("seeds", int, "+"),
    "--ablations": ("ablations", str, "+"),
    "--levels": ("levels", float, "+"),
    "--shuffles": ("shuffles", str, "+"),
    "--shuffle-levels": ("shuffle_levels", float, "+"),
    "--train-fraction": ("train_fraction", float, ""),
    "--val-fraction": ("val_fraction", float, ""),
    "--image-features": ("image_features", str, ""),
    "--hidden": ("hidden", int, ""),
    "--epochs": ("epochs", int, ""),
    "--batch-size": ("batch_size", int, ""),
    "--lr": ("lr", float, ""),
    "--weight-decay": ("weight_decay", float, ""),
    "--warmup": ("warmup", float, ""),
    "--grad-clip": ("grad_clip", float, ""),
    "--encode-batch-size": ("encode_batch_size", int, ""),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="argent probe",
        description="Taxonomic-generalisation probe (TaxGen) of a trained run, or (--figure) its exposure plot.",
        epilog="Defaults: " + ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(ProbeConfig()).items()),
    )
    p.add_argument("--run", type=Path, help="run folder (config.yaml + checkpoint.pt)")
    p.add_argument("--data", type=Path, help="classification image folder (<id>/<image> + class_names.tsv)")
    p.add_argument("--taxonomy", type=Path, help="'parent child' id edges (default: <data>/taxonomy.txt)")
    p.add_argument("--names", type=Path, nargs="*", default=[], help="extra '<id>\\t<name>' files for hypernym names")
    p.add_argument("--out", type=Path, required=True, help="result JSON (or the PNG with --figure); written atomically")
    p.add_argument("--params", type=Path, help="YAML mapping of probe options (or a file with a 'probe:' section)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    p.add_argument("--policy", choices=("skip", "strict"), default="skip", help="bad images: skip and count, or fail")
    p.add_argument("--figure", type=Path, nargs="+", help="probe JSONs to plot instead of probing")
    p.add_argument("--split", default="unseen", choices=SPLITS, help="--figure: split to plot (default unseen)")
    p.add_argument("--metric", default="category_mean_macro_f1", choices=("category_mean_macro_f1", "macro_f1"),
                   help="--figure: metric to plot")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    for flag, (name, tp, nargs) in _FLAGS.items():
        kwargs: dict[str, Any] = {"dest": name, "type": tp, "default": None}
        if nargs:
            kwargs["nargs"] = nargs
        p.add_argument(flag, **kwargs)
    return p


def resolve_config(args: argparse.Namespace) -> ProbeConfig:
    """Defaults, then ``--params`` (its ``probe:`` section if it has one), then explicit flags."""
    from argent.config import from_dict, load_yaml

    values = dataclasses.asdict(ProbeConfig())
    if args.params:
        raw = load_yaml(args.params)
        values.update(raw["probe"] if isinstance(raw.get("probe"), dict) else raw)
    for name, _, _ in _FLAGS.values():
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    cfg = from_dict(ProbeConfig, values, "probe")
    cfg.check()
    return cfg


def write_json(path: str | Path, data: Mapping[str, Any]) -> None:
    """Indented JSON, atomically; NaN is refused."""
    atomic_write_json(path, data, indent=1)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from argent.config import ConfigError
    from argent.data.policy import BadDataError, BadDataPolicy
    from argent.data.taxonomy import TaxonomyError

    if args.figure:
        try:
            out = plot_exposure(args.figure, args.out, split=args.split, metric=args.metric)
        except (OSError, ValueError, KeyError) as err:
            print(f"argent probe --figure: {err}", file=sys.stderr)
            return 2
        print(json.dumps({"figure": str(out), "inputs": len(args.figure)}))
        return 0
    if args.run is None or args.data is None:
        print("argent probe: --run and --data are required (or --figure JSON... --out PNG)", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        cfg = resolve_config(args)
        from argent.runs import load_model

        model, exp = load_model(args.run, device=args.device)
        result = probe_model(model, args.data, args.taxonomy, args.names, cfg, BadDataPolicy(args.policy), progress=say)
    except (ConfigError, BadDataError, TaxonomyError, FileNotFoundError, ValueError) as err:
        print(f"argent probe: {err}", file=sys.stderr)
        return 2
    result["run"] = str(args.run)
    result["config_hash"] = exp.result_hash()
    result["model"].update({"family": exp.variant_name, "size": exp.size, "run_seed": exp.seed})
    write_json(args.out, result)
    headline = {}
    for cond in result["conditions"]:
        unseen = cond["summary"]["test"].get("unseen")
        if unseen:
            headline[cond["name"]] = round(unseen["category_mean_macro_f1"]["mean"], 3)
    print(json.dumps({"out": str(args.out), "seconds": result["seconds"], "unseen_category_mean_macro_f1": headline}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
