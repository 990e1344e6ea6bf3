"""Entailment terms on (parent, child) pairs: MERU/HyCoCLIP's cone hinge and ARGENT's adaptive
Huber loss (docs/method.md §3).

A kind's per-pair loss is registered in ``argent.config.ENTAILMENT_KINDS`` with the variant fields it
reads (``cone_pair_loss``, ``adaptive_pair_loss``). Pair types are named parent_child (``argent.config.PAIR_TYPES``): text_image (caption ⊒ image),
phrase_crop (phrase ⊒ crop), crop_image (crop ⊒ image), phrase_text (phrase ⊒ caption). Each pair
type's loss is the mean over the batch; ``reduce_pairs`` combines the per-type means.

All geometry runs in float32 (float64 passes through) with autocast off.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from argent import geometry as geo
from argent.config import ENTAILMENT_KINDS, INTRA_PAIRS, VariantConfig
from argent.losses._precision import full, no_autocast

__all__ = [
    "PAIR_ITEMS",
    "cone_loss",
    "h_applies",
    "adaptive_weight",
    "huber",
    "adaptive_loss",
    "cone_pair_loss",
    "adaptive_pair_loss",
    "pair_losses",
    "reduce_pairs",
]

PAIR_ITEMS: dict[str, tuple[str, str]] = {
    "text_image": ("text", "image"),
    "phrase_crop": ("phrase", "crop"),
    "crop_image": ("crop", "image"),
    "phrase_text": ("phrase", "text"),
}
"""Pair type -> (parent item, child item), item names as in the embedding dict (one per PAIR_TYPES)."""


def cone_loss(parent: Tensor, child: Tensor, curv: float | Tensor, *, k: float = 0.1, eta: float = 1.0) -> Tensor:
    """max(0, φ(p, c) − η·ω(p)) per pair: (B, D), (B, D) -> (B,). ω = asin(2K/(√c‖p̃‖)), K = ``k``.

    For ‖p̃‖ ≤ 2K/√c, ω saturates just under π/2 (``geometry.half_aperture``), the cone is a
    half-space and every child with φ < η·ω costs nothing (cone collapse, ARGENT Fig. 2).
    """
    with no_autocast(parent.device):
        parent, child = full(parent), full(child)
        phi = geo.exterior_angle(parent, child, curv)
        return F.relu(phi - eta * geo.half_aperture(parent, curv, min_radius=k))


def h_applies(pair: str, mode: str) -> bool:
    """Whether the adaptive weight h multiplies pair type ``pair`` under ``adaptive_weight: mode``."""
    if mode == "none":
        return False
    if mode == "any":
        return True
    if mode == "intra":
        return pair in INTRA_PAIRS
    raise ValueError(f"adaptive_weight: {mode!r} is not one of none, any, intra")


def adaptive_weight(
    parent: Tensor, child: Tensor, curv: float | Tensor, *, tau: float = 1.0, detach: bool = True
) -> Tensor:
    """h = 1 − exp(−d(p, c)/τ): (B, D), (B, D) -> (B,), in [0, 1).

    h -> 0 as the child approaches its parent (nearly identical crop and image: the angle is
    ill-conditioned there and carries no hierarchy). With the distance clamp of
    ``geometry.paired_dist`` identical points give d ≈ √(2ε)/√c, i.e. h ≈ 1.4e-3 in float32.
    ``detach``: h is a pure weight (argent default; docs/method.md §9).
    """
    with no_autocast(parent.device):
        parent, child = full(parent), full(child)
        h = -torch.expm1(-geo.paired_dist(parent, child, curv) / tau)
    return h.detach() if detach else h


def huber(u: Tensor, beta: float, form: str = "smooth_l1") -> Tensor:
    """Elementwise Huber penalty of u against 0.

    smooth_l1: u²/(2β) for |u| < β, else |u| − β/2 (``F.smooth_l1_loss``).
    huber: ½u² for |u| < β, else β(|u| − β/2) (``F.huber_loss``, delta = β). Equal at β = 1.
    """
    zero = torch.zeros_like(u)
    if form == "smooth_l1":
        return F.smooth_l1_loss(u, zero, reduction="none", beta=beta)
    if form == "huber":
        return F.huber_loss(u, zero, reduction="none", delta=beta)
    raise ValueError(f"huber_form: {form!r} is not 'smooth_l1' or 'huber'")


def adaptive_loss(
    parent: Tensor,
    child: Tensor,
    curv: float | Tensor,
    *,
    use_h: bool,
    beta: float = 1.0,
    form: str = "smooth_l1",
    tau: float = 1.0,
    detach_h: bool = True,
    angle_norm: str = "none",
) -> Tensor:
    """ARGENT Eq. 7, Huber_β(h·φ(p, c)) per pair: (B, D), (B, D) -> (B,).

    ``use_h`` False sets h ≡ 1. ``angle_norm`` "pi" uses φ/π ∈ (0, 1) instead of radians.
    """
    with no_autocast(parent.device):
        parent, child = full(parent), full(child)
        phi = geo.exterior_angle(parent, child, curv)
        if angle_norm == "pi":
            phi = phi / math.pi
        elif angle_norm != "none":
            raise ValueError(f"angle_norm: {angle_norm!r} is not 'none' or 'pi'")
        u = phi
        if use_h:
            u = adaptive_weight(parent, child, curv, tau=tau, detach=detach_h) * phi
        return huber(u, beta, form)


def pair_losses(emb: dict[str, Tensor], curv: float | Tensor, variant: VariantConfig) -> dict[str, Tensor]:
    """Batch-mean entailment loss per pair type in ``variant.entailment_pairs`` -> {pair: 0-d}.

    Empty when ``variant.entailment`` is "none". Raises KeyError naming the missing item when a
    pair's parent or child embedding is absent.
    """
    kind = ENTAILMENT_KINDS[variant.entailment]  # the registry (argent/config/loss_kinds.py); VariantConfig checked the name
    if not kind.loss:
        return {}
    loss = kind.loss_fn()
    out: dict[str, Tensor] = {}
    for pair in variant.entailment_pairs:
        parent_key, child_key = PAIR_ITEMS[pair]
        for key in (parent_key, child_key):
            if key not in emb:
                raise KeyError(f"entailment pair {pair!r} needs the {key!r} embedding; got {sorted(emb)}")
        out[pair] = loss(emb[parent_key], emb[child_key], curv, variant, pair).mean()
    return out


def cone_pair_loss(parent: Tensor, child: Tensor, curv: float | Tensor, variant: VariantConfig, pair: str) -> Tensor:
    """The ``cone`` kind (MERU, HyCoCLIP): ``cone_loss`` with the variant's K and the pair's η -> (B,)."""
    return cone_loss(parent, child, curv, k=variant.cone_k, eta=variant.cone_eta.get(pair, 1.0))


def adaptive_pair_loss(parent: Tensor, child: Tensor, curv: float | Tensor, variant: VariantConfig,
                       pair: str) -> Tensor:
    """The ``adaptive`` kind (ARGENT): ``adaptive_loss`` with h on the pairs ``adaptive_weight`` names -> (B,)."""
    return adaptive_loss(parent, child, curv, use_h=h_applies(pair, variant.adaptive_weight), beta=variant.huber_beta,
                         form=variant.huber_form, tau=variant.h_tau, detach_h=variant.detach_h,
                         angle_norm=variant.angle_norm)


def reduce_pairs(per_pair: dict[str, Tensor], reduction: str) -> Tensor:
    """Combine per-type means: sum | half_sum (½·Σ, HyCoCLIP) | mean."""
    if not per_pair:
        raise ValueError("reduce_pairs: no pair terms to reduce")
    total = torch.stack(list(per_pair.values())).sum()
    if reduction == "sum":
        return total
    if reduction == "half_sum":
        return 0.5 * total
    if reduction == "mean":
        return total / len(per_pair)
    raise ValueError(f"pair_reduction: {reduction!r} is not one of sum, half_sum, mean")
