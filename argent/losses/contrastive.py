"""Contrastive (InfoNCE) terms: CLIP/MERU's 2-term and HyCoCLIP's 4-term, with optional hard
negatives (docs/method.md §3, §7.2).

Logits are z = s·σ with σ = cos (euclidean) or σ = −d, the geodesic distance (lorentz). Each rank
scores its local B rows against columns gathered from every rank (``gather_with_grad``), targets
``arange(B) + rank·B``, cross-entropy averaged over rows.

Hard negatives (NegCLIP's rule): one generated caption per sample, gathered like the real ones and
appended as extra columns of the image→text logits only; text→image stays over real captions. A
sample without a negative (``mask`` False) contributes no column: its column is −inf for every
row. A per-row margin (Cement, ``cement.py``) can be added to the row's *own* negative's
similarity before scaling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from argent import geometry as geo
from argent.losses.gather import gather_with_grad, rank_and_world

__all__ = ["similarity", "ContrastiveResult", "contrastive_loss"]


def similarity(x: Tensor, y: Tensor, *, geometry: str, curv: float | Tensor) -> Tensor:
    """σ for every row of x (B1, D) and of y (B2, D) -> (B1, B2): cos (euclidean) or −d (lorentz)."""
    if geometry == "euclidean":
        return F.normalize(x, dim=-1) @ F.normalize(y, dim=-1).T
    if geometry == "lorentz":
        return -geo.pairwise_dist(x, y, curv)
    raise ValueError(f"geometry: {geometry!r} is not 'euclidean' or 'lorentz'")


@dataclass
class ContrastiveResult:
    """What the contrastive step computed, kept for the Cement hinge and the diagnostics.

    loss: mean of the directional terms. terms: raw CE per direction ("image_text", "text_image",
    and with boxes "crop_text", "phrase_image"). image_text_logits: (B, N [+ N]) the image→text
    logits as used (margin added, masked columns −inf), N = world·B. targets: (B,) positive column
    of each row. hard_index: (B,) column of each row's own negative, or None. positive_sim,
    hard_sim: (B,) σ(I_i, T_i) and σ(I_i, H_i) before any margin (hard_sim None without negatives).
    hard_mask: (B,) local rows that have a negative, or None. n_captions: N, the first hard column.
    """

    loss: Tensor
    terms: dict[str, Tensor]
    image_text_logits: Tensor
    targets: Tensor
    positive_sim: Tensor
    hard_index: Tensor | None = None
    hard_sim: Tensor | None = None
    hard_mask: Tensor | None = None
    n_captions: int = 0


def contrastive_loss(
    emb: dict[str, Tensor],
    *,
    geometry: str,
    curv: float | Tensor,
    logit_scale: Tensor,
    four_term: bool,
    hard_text: Tensor | None = None,
    hard_mask: Tensor | None = None,
    hard_margin: Tensor | None = None,
) -> ContrastiveResult:
    """Contrastive loss of the local rows against gathered columns.

    emb: "image", "text" (B, D) and, when ``four_term``, "crop", "phrase" (B, D).
    four_term: HyCoCLIP's ¼[I→T + T→I + I_b→T + T_b→I] (each row's target its own full-modality
    partner, no crop↔phrase term); otherwise ½[I→T + T→I].
    hard_text: (B, D) one negative caption per sample; hard_mask: bool (B,), False where a sample
    has none (default all True); hard_margin: (B,) added to σ(I_i, H_i) of each row's own
    negative before scaling (similarity units).
    """
    image, text = emb["image"], emb["text"]
    b = image.shape[0]
    rank, _ = rank_and_world()
    rows = torch.arange(b, device=image.device)
    targets = rows + rank * b

    def sim(x: Tensor, y: Tensor) -> Tensor:
        return similarity(x, y, geometry=geometry, curv=curv)

    images_all, texts_all = gather_with_grad(image), gather_with_grad(text)
    sim_it = sim(image, texts_all)
    logits_it = logit_scale * sim_it
    hard_index = hard_sim = None
    if hard_text is not None:
        hard_block, hard_sim, hard_mask = _hard_negatives(image, hard_text, hard_mask, rows, targets, hard_margin,
                                                          logit_scale, sim)
        hard_index = targets + sim_it.shape[1]
        logits_it = torch.cat([logits_it, hard_block], dim=1)

    terms = {
        "image_text": F.cross_entropy(logits_it, targets),
        "text_image": F.cross_entropy(logit_scale * sim(text, images_all), targets),
    }
    if four_term:
        terms["crop_text"] = F.cross_entropy(logit_scale * sim(emb["crop"], texts_all), targets)
        terms["phrase_image"] = F.cross_entropy(logit_scale * sim(emb["phrase"], images_all), targets)
    return ContrastiveResult(
        loss=torch.stack(list(terms.values())).mean(),
        terms=terms,
        image_text_logits=logits_it,
        targets=targets,
        positive_sim=sim_it[rows, targets],
        hard_index=hard_index,
        hard_sim=hard_sim,
        hard_mask=hard_mask if hard_text is not None else None,
        n_captions=sim_it.shape[1],
    )


def _hard_negatives(image: Tensor, hard_text: Tensor, hard_mask: Tensor | None, rows: Tensor, targets: Tensor,
                    margin: Tensor | None, logit_scale: Tensor,
                    sim: Callable[[Tensor, Tensor], Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    """(the block of hard-negative logits, each row's similarity to its own negative, the mask as bool) of the
    local rows against every rank's negatives."""
    if hard_mask is None:
        hard_mask = torch.ones(image.shape[0], dtype=torch.bool, device=image.device)
    hard_mask = hard_mask.to(device=image.device, dtype=torch.bool)
    # Gathered as floats: not every backend all-gathers bool tensors.
    mask_all = gather_with_grad(hard_mask.to(image.dtype)) > 0.5
    sim_ih = sim(image, gather_with_grad(hard_text))  # (B, N)
    # Negatives are gathered in the same order as captions, so row i's own negative sits at
    # column targets[i] of the hard block.
    return _hard_logits(sim_ih, targets, mask_all, margin, logit_scale), sim_ih[rows, targets], hard_mask


def _hard_logits(
    sim_ih: Tensor, own: Tensor, mask_all: Tensor, margin: Tensor | None, logit_scale: Tensor
) -> Tensor:
    """Scaled hard-negative block (B, N): margin on each row's own column, absent negatives −inf."""
    if margin is not None:
        onehot = F.one_hot(own, sim_ih.shape[1]).to(sim_ih.dtype)
        sim_ih = sim_ih + onehot * margin.to(sim_ih.dtype)[:, None]
    # −inf, not a large negative number: an absent negative must get exactly zero softmax mass.
    return (logit_scale * sim_ih).masked_fill(~mask_all[None, :], float("-inf"))
