"""ARGENT's norm regulariser L_Reg(x) = ‖x̃‖² − log‖x̃‖ (docs/method.md §3).

It is minimised at ‖x̃‖ = 1/√2 (value ½ + ½·ln 2 ≈ 0.847): the −log term repels collapse to the
origin (where every cone is a half-space), the square repels outward drift.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from argent.losses._precision import full, no_autocast

__all__ = ["norm_reg"]

_MIN_NORM = 1e-6  # log(0) = −inf at the origin; the clamp keeps the loss and its gradient finite


def norm_reg(embeddings: Iterable[Tensor]) -> Tensor:
    """Mean of ‖x̃‖² − log max(‖x̃‖, 1e-6) over every row of every (B_k, D) tensor given -> 0-d."""
    embeddings = list(embeddings)
    if not embeddings:
        raise ValueError("norm_reg: no embeddings given")
    with no_autocast(embeddings[0].device):
        rows = torch.cat([full(x) for x in embeddings], dim=0)
        sq = (rows * rows).sum(-1)
        norm = torch.linalg.vector_norm(rows, dim=-1).clamp(min=_MIN_NORM)
        return (sq - torch.log(norm)).mean()
