"""Every probe condition (shuffle × ablation × level) × seed on precomputed embeddings: split,
relabel, ask, train a projector, score, and summarise over seeds (docs/probe.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from argent.probe.config import ProbeOptions
from argent.probe.metrics import coherence_correlation, mean_ci, split_metrics, visual_coherence
from argent.probe.projector import TextSpace, predict, train_projector
from argent.probe.protocol import (
    HYPERNYM_SPLITS,
    SPLITS,
    STREAM_ABLATION,
    STREAM_QUESTIONS,
    STREAM_SHUFFLE,
    TEST,
    TRAIN,
    VAL,
    Hierarchy,
    Questions,
    across_shuffle,
    build_questions,
    condition_name,
    held_out,
    kind_for,
    random_ablation,
    split_images,
    systematic_ablation,
    within_groups,
    within_shuffle,
)


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


def _conditions(cfg: ProbeOptions) -> list[tuple[str, str, float]]:
    """(shuffle, kind, level) triples, deduplicated (0 % and 100 % are the same for both kinds)."""
    seen: dict[tuple[str, str, float], None] = {}
    for shuffle in cfg.shuffles:
        levels = cfg.levels if shuffle == "none" else cfg.shuffle_levels
        for kind in cfg.ablations:
            for level in levels:
                k = kind_for(level, kind)
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
    rng = np.random.default_rng([seed, STREAM_SHUFFLE])
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
    cfg: ProbeOptions,
    space: TextSpace,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every (shuffle, ablation, level) condition × seed: train a projector, score val and test.

    Returns {"conditions": [...]} (the JSON's protocol part; docs/probe.md).
    """
    _check_embeddings(emb, hierarchy)
    conditions = _conditions(cfg)
    records: dict[tuple[str, str, float], list[dict[str, Any]]] = {c: [] for c in conditions}
    extras: dict[tuple[str, str, float], dict[str, Any]] = {c: {} for c in conditions}
    for shuffle in cfg.shuffles:
        mine = [c for c in conditions if c[0] == shuffle]
        for seed in cfg.seeds:
            split = split_images(emb.keys, emb.image_leaf, seed, cfg.train_fraction, cfg.val_fraction)
            labels, mapping = _relabel(emb.image_leaf, hierarchy, shuffle, seed)
            questions = build_questions(labels, hierarchy, np.random.default_rng([seed, STREAM_QUESTIONS]))
            seeded = _Seeded(seed, split, labels, questions, _standardise(emb.features, split == TRAIN),
                             visual_coherence(emb.features, labels, split == TRAIN, hierarchy))
            for condition in mine:
                record, ablation = _one_condition(condition, seeded, emb, hierarchy, cfg, space)
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


def _check_embeddings(emb: ProbeEmbeddings, hierarchy: Hierarchy) -> None:
    """One feature, key and label per image; one embedding per concept; every label a leaf."""
    n = len(emb.image_leaf)
    if emb.features.shape[0] != n or len(emb.keys) != n:
        raise ValueError(f"probe: {emb.features.shape[0]} features, {len(emb.keys)} keys, {n} labels; they must match")
    if emb.concept_emb.shape[0] != len(hierarchy.concepts):
        raise ValueError(f"probe: {emb.concept_emb.shape[0]} concept embeddings for {len(hierarchy.concepts)} concepts")
    unknown = sorted(set(emb.image_leaf) - set(hierarchy.leaves))
    if unknown:
        raise ValueError(f"probe: image labels {unknown[:5]} are not leaves of the hierarchy")


@dataclass(frozen=True)
class _Seeded:
    """What every condition of one (shuffle, seed) shares: its split, labels, questions, standardised features
    and visual coherence."""

    seed: int
    split: np.ndarray
    labels: list[str]
    questions: Any
    features: Any
    coherence: Any


def _one_condition(condition: tuple[str, str, float], seeded: _Seeded, emb: ProbeEmbeddings, hierarchy: Hierarchy,
                   cfg: ProbeOptions, space: TextSpace) -> tuple[dict[str, Any], Any]:
    """One (shuffle, ablation, level) condition at one seed: the ablation drawn, a projector trained on the
    questions it leaves, val and test scored. Returns (the seed's record, the ablation)."""
    _, kind, level = condition
    seed, split, questions = seeded.seed, seeded.split, seeded.questions
    rng = np.random.default_rng([seed, STREAM_ABLATION])
    draw = systematic_ablation if kind == "systematic" else random_ablation
    ablation = draw(hierarchy, level, rng)
    withheld = held_out(questions, seeded.labels, hierarchy, ablation)
    train_q = questions.subset((split[questions.image] == TRAIN) & ~withheld)
    proj, history = train_projector(seeded.features, emb.concept_emb, train_q, space, cfg, seed)
    preds = predict(proj, seeded.features, emb.concept_emb, questions, space, cfg.eval_chunk)
    record = {
        "seed": seed,
        "counts": _question_counts(questions, split, withheld),
        "removed_leaves": {h: list(v) for h, v in ablation.removed_leaves.items() if v},
        "removed_hypernyms": list(ablation.removed_hypernyms),
        "training": history,
        "coherence": seeded.coherence,
        "metrics": {
            name: split_metrics(questions, preds, _split_masks(questions, split, code, withheld), hierarchy.concepts)
            for name, code in (("val", VAL), ("test", TEST))
        },
    }
    return record, ablation


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
        "name": f"{condition_name(kind, level)}/{shuffle}",
        "ablation": kind,
        "level": level,
        "shuffle": shuffle,
        "summary": summary,
        "per_category": per_category,
        "coherence_mean": mean_ci(seed_means),
        "coherence_vs_f1": coherence_correlation(per_category),
        **extra,
        "seeds": seeds,
    }
