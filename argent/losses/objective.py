"""The training objective, composed from a ``VariantConfig``'s fields (never from its name).

L = L_cont + entailment_weight·reduce(per-pair entailment) + norm_reg_weight·L_Reg
    (+ cement.hinge_weight·hinge when the Cement margin is in hinge mode).

Terms in ``LossOutput.terms``:
- ``contrastive`` (weight 1) and ``contrastive/<direction>`` (raw CE per direction);
- ``entailment`` (weighted) = entailment_weight·``entailment_raw``, and ``entailment/<pair>``
  (raw batch mean per pair type);
- ``norm_reg`` (weighted) = norm_reg_weight·``norm_reg_raw``;
- ``cement_hinge`` (weighted) = hinge_weight·``cement_hinge_raw``.
``total`` is the sum of the terms whose names have neither "/" nor "_raw" (``LossOutput.weighted``).
Everything is computed in float32 (float64 passes through) with autocast off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from argent import geometry as geo
from argent.config import VariantConfig
from argent.losses._precision import full, no_autocast
from argent.losses.cement import gradient_share, hinge_loss, margins
from argent.losses.contrastive import ContrastiveResult, contrastive_loss
from argent.losses.entailment import PAIR_ITEMS, pair_losses, reduce_pairs
from argent.losses.norm_reg import norm_reg

__all__ = ["LossOutput", "Objective", "diagnostics", "ITEMS", "BOX_ITEMS"]

ITEMS = ("image", "text")
BOX_ITEMS = ("crop", "phrase")
_QUANTILES = (0.05, 0.5, 0.95)


@dataclass
class LossOutput:
    """total: 0-d loss to back-propagate; terms: named 0-d tensors (see module docstring);
    diagnostics: plain floats for logging (no graph)."""

    total: Tensor
    terms: dict[str, Tensor] = field(default_factory=dict)
    diagnostics: dict[str, float] = field(default_factory=dict)

    def weighted(self) -> dict[str, Tensor]:
        """The terms that add up to ``total``."""
        return {k: v for k, v in self.terms.items() if _is_weighted(k)}


def _is_weighted(name: str) -> bool:
    return "/" not in name and not name.endswith("_raw")


class Objective:
    """Loss for one variant. ``Objective(variant)(emb, curv=..., logit_scale=..., geometry=...)``."""

    def __init__(self, variant: VariantConfig) -> None:
        self.variant = variant

    def items(self) -> tuple[str, ...]:
        """Embedding names this variant consumes."""
        return ITEMS + BOX_ITEMS if self.variant.use_boxes else ITEMS

    def __call__(
        self,
        emb: dict[str, Tensor],
        *,
        curv: Tensor,
        logit_scale: Tensor,
        geometry: str,
        hard: dict[str, Tensor] | None = None,
        with_diagnostics: bool = True,
    ) -> LossOutput:
        """emb: "image", "text" (+ "crop", "phrase" with use_boxes), each (B, D) lifted (hyperboloid
        space part, or unit sphere). hard: {"text": (B, D) lifted negatives, "concreteness": (B,) ĉ,
        "mask": bool (B,)} or None. ``with_diagnostics`` False skips the host syncs of the
        gradient-share numbers on steps that log nothing.
        """
        self._check(emb, geometry, hard)
        v = self.variant
        with no_autocast(emb["image"].device):
            e = {k: full(emb[k]) for k in self.items()}
            c = full(curv) if isinstance(curv, Tensor) else curv
            hard_text, hard_mask, margin = self._hard_inputs(hard)
            use_logit_margin = margin is not None and v.cement.margin_mode == "logit"

            cont = contrastive_loss(
                e,
                geometry=geometry,
                curv=c,
                logit_scale=full(logit_scale),
                four_term=v.use_boxes,
                hard_text=hard_text,
                hard_mask=hard_mask,
                hard_margin=margin if use_logit_margin else None,
            )
            terms: dict[str, Tensor] = {"contrastive": cont.loss}
            terms.update({f"contrastive/{k}": t for k, t in cont.terms.items()})
            self._add_other_terms(terms, e, c, cont, margin)  # in this order: the total sums them in it

            total = torch.stack([t for k, t in terms.items() if _is_weighted(k)]).sum()
            out = LossOutput(total=total, terms=terms)

        if with_diagnostics:
            out.diagnostics = _step_diagnostics(cont, hard, margin)
        return out

    def _check(self, emb: dict[str, Tensor], geometry: str, hard: dict[str, Tensor] | None) -> None:
        """The model's geometry, embeddings and hard negatives are the ones this variant consumes."""
        v = self.variant
        if geometry != v.geometry:
            raise ValueError(f"Objective: model geometry {geometry!r} != variant geometry {v.geometry!r}")
        missing = [k for k in self.items() if k not in emb]
        if missing:
            raise KeyError(f"Objective: embeddings {missing} missing (use_boxes={v.use_boxes}); got {sorted(emb)}")
        if hard is not None and v.hard_negatives == "none":
            raise ValueError("Objective: hard negatives given but the variant has hard_negatives: none")

    def _hard_inputs(self, hard: dict[str, Tensor] | None) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        """(the hard negatives' embeddings in float32, their mask, the Cement margin of each when enabled)."""
        if hard is None:
            return None, None, None
        margin = None
        if self.variant.cement.enabled:
            if "concreteness" not in hard:
                raise KeyError("Objective: cement is enabled but hard['concreteness'] is missing")
            margin = margins(full(hard["concreteness"]), self.variant.cement)
        return full(hard["text"]), hard.get("mask"), margin

    def _add_other_terms(self, terms: dict[str, Tensor], e: dict[str, Tensor], c: Tensor, cont: ContrastiveResult,
                         margin: Tensor | None) -> None:
        """The entailment, norm-regulariser and Cement hinge terms the variant asks for, each weighted and raw."""
        v = self.variant
        if v.entailment != "none":
            per_pair = pair_losses(e, c, v)
            raw = reduce_pairs(per_pair, v.pair_reduction)
            terms["entailment"] = v.entailment_weight * raw
            terms["entailment_raw"] = raw
            terms.update({f"entailment/{p}": t for p, t in per_pair.items()})

        if v.norm_reg_weight > 0:
            raw = norm_reg(e.values())
            terms["norm_reg"] = v.norm_reg_weight * raw
            terms["norm_reg_raw"] = raw

        if margin is not None and v.cement.margin_mode == "hinge":
            raw = hinge_loss(cont.positive_sim, cont.hard_sim, margin, cont.hard_mask)
            terms["cement_hinge"] = v.cement.hinge_weight * raw
            terms["cement_hinge_raw"] = raw


def _step_diagnostics(cont: ContrastiveResult, hard: dict[str, Tensor] | None, margin: Tensor | None) -> dict[str, float]:
    with torch.no_grad():
        logits = cont.image_text_logits.detach()
        d = {"contrastive/acc_image_text": (logits.argmax(1) == cont.targets).float().mean().item()}
        if cont.hard_index is not None:
            mask = cont.hard_mask
            d["hard/rows"] = mask.float().mean().item()
            conc = hard.get("concreteness") if hard else None
            if conc is None:
                conc = torch.zeros(mask.shape[0], device=logits.device)
            d.update(gradient_share(logits, cont.targets, cont.hard_index, mask, conc,
                                    hard_columns_from=cont.n_captions))
            if margin is not None and bool(mask.any()):
                d["cement/margin_mean"] = margin[mask.to(torch.bool)].mean().item()
    return d


def diagnostics(emb: dict[str, Tensor], curv: Tensor | float, variant: VariantConfig) -> dict[str, float]:
    """Geometry health, no gradient: ``norm/<item>/{mean,q05,q50,q95}`` for every item present;
    for lorentz also ``phi/<pair>`` (mean exterior angle of positive pairs, radians) for every pair
    type whose two items are present, and ``collapse/<parent>`` (share of parents with
    ‖p̃‖ < 2K/√c, where the cone is a half-space) for each parent item present.
    """
    out: dict[str, float] = {}
    items = ITEMS + BOX_ITEMS if variant.use_boxes else ITEMS
    with torch.no_grad(), no_autocast(emb["image"].device):
        e = {k: full(emb[k]).detach() for k in items if k in emb}
        c = float(curv)
        norms = {k: torch.linalg.vector_norm(x, dim=-1) for k, x in e.items()}
        for k, n in norms.items():
            out[f"norm/{k}/mean"] = n.mean().item()
            qs = torch.quantile(n, torch.tensor(_QUANTILES, dtype=n.dtype, device=n.device))
            for q, val in zip(_QUANTILES, qs.tolist()):
                out[f"norm/{k}/q{round(q * 100):02d}"] = val
        if variant.geometry != "lorentz":
            return out
        for pair, (parent, child) in PAIR_ITEMS.items():
            if parent in e and child in e:
                out[f"phi/{pair}"] = geo.exterior_angle(e[parent], e[child], c).mean().item()
        bound = 2.0 * variant.cone_k / math.sqrt(c)
        for parent in dict.fromkeys(p for p, _ in PAIR_ITEMS.values()):
            if parent in e:
                out[f"collapse/{parent}"] = (norms[parent] < bound).float().mean().item()
    return out
