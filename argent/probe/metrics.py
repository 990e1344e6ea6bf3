"""The probe's statistics: macro-F1 and its baselines per split and category, the t-based 95 %
interval over seeds, visual coherence, and its correlation with F1 (docs/probe.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from scipy import stats
from sklearn.metrics import f1_score
from torch import Tensor

from argent.probe.protocol import HYPERNYM_SPLITS, NO, YES, Hierarchy, Questions

CI_METHOD = "mean ± t-based 95% CI over seeds: half-width t(0.975, n−1)·sd/√n (sd with ddof=1); null when n < 2"


def macro_f1(answers: np.ndarray, predictions: np.ndarray) -> float:
    """Macro-F1 over {No, Yes}; a label with no true and no predicted sample scores 0 (sklearn zero_division=0)."""
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



def coherence_correlation(per_category: Mapping[str, Any]) -> dict[str, Any]:
    """Pearson and Spearman correlation over categories of mean coherence vs mean test macro-F1 (per split)."""
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
