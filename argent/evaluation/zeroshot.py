"""Zero-shot classification (docs/method.md §6.1; HyCoCLIP ``evaluation/classification.py``).

Class prototype: fill every template with the class name, encode the prompts with
``project=False`` (W f, before α / normalisation), **average in tangent space**, then lift with
``model.lift_text`` (α·v then exp₀ for Lorentz; normalise for CLIP). For CLIP each prompt
feature is normalised before the average (normalise, average, normalise — the final normalise
is ``lift_text``). Images are scored against the prototypes with ``model.similarity``;
prediction = argmax. Metrics: top-1 accuracy (micro) and mean per-class accuracy (macro, the
torchmetrics ``MulticlassAccuracy`` default the reference reports; equal to top-1 on a
balanced set), as fractions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from argent.evaluation.items import macro_item_values

__all__ = [
    "fill_templates",
    "average_prompts",
    "classification_metrics",
    "classification_item_values",
]


def fill_templates(class_names: Sequence[str], templates: Sequence[str]) -> list[str]:
    """Prompts in class-major order: C × P strings, prompt [c·P + p] = templates[p] ∘ names[c]."""
    return [template.format(name) for name in class_names for template in templates]


def average_prompts(features: Tensor, normalise_each: bool) -> Tensor:
    """Average prompt features per class: (C, P, D) -> (C, D), in tangent space.

    ``normalise_each`` (CLIP) L2-normalises every prompt feature first; Lorentz models average
    the raw W f (the tangent vectors before α and exp₀).
    """
    if features.ndim != 3:
        raise ValueError(f"average_prompts: expected (C, P, D), got {tuple(features.shape)}")
    if normalise_each:
        features = torch.nn.functional.normalize(features, dim=-1)
    return features.mean(dim=1)


def classification_metrics(predictions: np.ndarray | Tensor, labels: np.ndarray | Tensor, n_classes: int) -> dict[str, float | int]:
    """Top-1 accuracy and mean per-class accuracy over the classes present in ``labels``.

    predictions, labels: (N,) integer class indices in [0, n_classes).
    """
    pred = np.asarray(predictions, dtype=np.int64)
    true = np.asarray(labels, dtype=np.int64)
    if pred.shape != true.shape or pred.ndim != 1 or pred.size == 0:
        raise ValueError(f"classification_metrics: bad shapes {pred.shape} vs {true.shape}")
    if true.min() < 0 or true.max() >= n_classes or pred.min() < 0 or pred.max() >= n_classes:
        raise ValueError(f"classification_metrics: class index outside [0, {n_classes})")
    correct = pred == true
    per_class = [correct[true == c].mean() for c in np.unique(true)]
    return {
        "top1": float(correct.mean()),
        "mean_per_class": float(np.mean(per_class)),
        "n_classes_evaluated": int(len(per_class)),
    }


def classification_item_values(predictions: np.ndarray | Tensor, labels: np.ndarray | Tensor) -> dict[str, np.ndarray]:
    """Per-image values of ``classification_metrics``' item means: {"top1": (N,), "mean_per_class": (N,)}.

    top1: 1.0 where the prediction is right. mean_per_class (a macro mean over the classes
    present): the 0/1 value weighted by N / (C · n_class) (``macro_item_values``), so that the
    plain mean over images is the mean per-class accuracy.
    """
    correct = (np.asarray(predictions, dtype=np.int64) == np.asarray(labels, dtype=np.int64)).astype(np.float64)
    return {"top1": correct, "mean_per_class": macro_item_values(correct, np.asarray(labels))}
