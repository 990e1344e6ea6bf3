"""Cement-style concreteness-calibrated margin on hard negatives, and gradient-share diagnostics.

What is published (Concrete Jungle, arXiv 2604.13313, abstract and project page only): InfoNCE
has a gradient imbalance in which easy pairs dominate; the Cement loss is *margin-based* and uses
the concreteness of the edited word to calibrate each pair's penalty. No formula, margin scale or
code is public.

What is argent's choice (docs/method.md §7.2, a documented stand-in, every knob in ``CementConfig``):
for sample i with a hard negative h(i) whose edited word has normalised concreteness ĉ_i ∈ [0, 1],
the margin is m_i = margin_max·g(ĉ_i), g(ĉ) = ĉ (``increasing``, default) or 1 − ĉ
(``decreasing``), in similarity units (cosine, or −d for Lorentz; the Lorentz scale needs tuning).
- ``logit`` (default): a CosFace-style margin moved onto the negative,
  z_{i,h(i)} = s·(σ(I_i, H_i) + m_i); it raises the negative's softmax share and so its gradient
  share (applied by ``contrastive_loss(hard_margin=...)``).
- ``hinge``: an extra hinge_weight·mean_i max(0, m_i − (σ_ii − σ_{i,h(i)})) over rows that have a
  negative (CE-CLIP's form with a concreteness-dependent margin; ``hinge_loss``).

Gradient-share diagnostics (docs/method.md §7.3, standard InfoNCE calculus): for row i with
p_ij = softmax_j(z_ij), ∂L_i/∂z_ij = p_ij − 1[j = i]; the total push on negatives is 1 − p_ii and
the hard share is r_i = p_{i,h(i)}/(1 − p_ii). A working Cement term should make r_i rise with ĉ_i.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from argent.config import CementConfig

__all__ = ["margins", "hinge_loss", "gradient_share"]


def margins(concreteness: Tensor, cfg: CementConfig) -> Tensor:
    """m_i = margin_max·g(ĉ_i): (B,) ĉ in [0, 1] -> (B,) margins (no gradient: ĉ is data)."""
    c = concreteness.detach().clamp(0.0, 1.0)  # ĉ is defined on [0, 1]; guards a bad upstream value
    if cfg.margin_direction == "increasing":
        g = c
    elif cfg.margin_direction == "decreasing":
        g = 1.0 - c
    else:
        raise ValueError(f"cement.margin_direction: {cfg.margin_direction!r} is not increasing/decreasing")
    return cfg.margin_max * g


def hinge_loss(positive_sim: Tensor, hard_sim: Tensor, margin: Tensor, mask: Tensor) -> Tensor:
    """mean over rows with a negative of max(0, m_i − (σ_ii − σ_{i,h(i)})): (B,) ×4 -> 0-d.

    Zero (still attached to the graph) when no row has a negative.
    """
    gap = positive_sim - hard_sim
    per_row = F.relu(margin.to(gap.dtype) - gap)
    mask = mask.to(torch.bool)
    if not bool(mask.any()):
        return (per_row * 0.0).sum()
    return per_row[mask].mean()


def gradient_share(
    logits: Tensor,
    targets: Tensor,
    hard_index: Tensor,
    mask: Tensor,
    concreteness: Tensor,
    *,
    hard_columns_from: int,
    n_bins: int = 4,
    easy_threshold: float = 0.9,
) -> dict[str, float]:
    """Where the image→text gradient goes, from the softmax in closed form (no autograd).

    logits: (B, N + N_h) image→text logits as used in the loss (hard columns from
    ``hard_columns_from`` on, absent ones −inf); targets, hard_index: (B,) positive and own-negative
    columns; mask: bool (B,) rows with a negative; concreteness: (B,) ĉ of each row's negative.
    Gradients are of the per-row loss L_i (the batch loss divides them by B).

    Returns ``grad/hard_share`` (mean r_i over rows with a negative), ``grad/hard_share_c<lo>-<hi>``
    (the same binned by ĉ into ``n_bins`` equal bins on [0, 1]; empty bins left out),
    ``grad/norm_hard``, ``grad/norm_batch_neg``, ``grad/norm_pos`` (mean over rows of the L2 norm of
    ∂L_i/∂z_i restricted to hard columns, in-batch negative columns, the positive column),
    ``grad/easy_rows`` (share of rows with p_ii > ``easy_threshold``) and ``grad/easy_mass`` (their
    share of the total L1 gradient mass Σ_i ‖∂L_i/∂z_i‖₁ = Σ_i 2(1 − p_ii)).
    """
    with torch.no_grad():
        z = logits.detach().double()  # float64: 1 − p_ii is a small difference for easy rows
        b = z.shape[0]
        rows = torch.arange(b, device=z.device)
        p = torch.softmax(z, dim=1)
        grad = p.clone()
        grad[rows, targets] -= 1.0
        p_pos = p[rows, targets]
        push = (1.0 - p_pos).clamp(min=torch.finfo(z.dtype).tiny)  # p_ii = 1 exactly: r_i = 0/tiny = 0
        ratio = p[rows, hard_index] / push

        is_hard_col = torch.zeros(z.shape[1], dtype=torch.bool, device=z.device)
        is_hard_col[hard_columns_from:] = True
        batch_neg = grad.clone()
        batch_neg[:, is_hard_col] = 0.0
        batch_neg[rows, targets] = 0.0

        out: dict[str, float] = {
            "grad/norm_hard": grad[:, is_hard_col].norm(dim=1).mean().item(),
            "grad/norm_batch_neg": batch_neg.norm(dim=1).mean().item(),
            "grad/norm_pos": (1.0 - p_pos).mean().item(),
        }
        mask = mask.to(device=z.device, dtype=torch.bool)
        if bool(mask.any()):
            out["grad/hard_share"] = ratio[mask].mean().item()
            out.update(_binned_shares(ratio, mask, concreteness.to(device=z.device, dtype=z.dtype), n_bins))
        easy = p_pos > easy_threshold
        mass = 2.0 * (1.0 - p_pos)
        out["grad/easy_rows"] = easy.double().mean().item()
        out["grad/easy_mass"] = (mass[easy].sum() / mass.sum().clamp(min=torch.finfo(z.dtype).tiny)).item()
    return out


def _binned_shares(ratio: Tensor, mask: Tensor, c: Tensor, n_bins: int) -> dict[str, float]:
    """``grad/hard_share_c<lo>-<hi>``: the mean share r_i of the rows with a negative whose ĉ falls in each of
    ``n_bins`` equal bins on [0, 1] (empty bins left out)."""
    out: dict[str, float] = {}
    edges = torch.linspace(0.0, 1.0, n_bins + 1, dtype=c.dtype, device=c.device)
    # bucketize with right=True puts ĉ = 1 in an extra bin; fold it into the last one.
    which = (torch.bucketize(c, edges, right=True) - 1).clamp(0, n_bins - 1)
    for k in range(n_bins):
        sel = mask & (which == k)
        if bool(sel.any()):
            name = f"grad/hard_share_c{edges[k].item():.2f}-{edges[k + 1].item():.2f}"
            out[name] = ratio[sel].mean().item()
    return out
