"""Gathering embeddings across data-parallel ranks for the contrastive loss.

The contrastive terms use a *local loss with a differentiable gather* (open_clip's
``local_loss=True, gather_with_grad=True``): each rank scores its own B rows against the columns
of every rank, with targets ``arange(B) + rank·B``, and averages over its rows. The gather must
carry gradients back to the rank that owns each shard: rank r's loss depends on rank r′'s
features through the columns, and with a no-grad gather (keeping only the local shard's gradient)
those contributions would be lost. ``torch.distributed.nn.functional.all_gather`` reduces the
column gradients back to their owners (a reduce-scatter with sum), so after DDP's gradient
averaging every rank holds ∂(mean_r L_r)/∂θ, the gradient of the single-process loss on the
concatenated batch.
"""

from __future__ import annotations

import warnings

import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ["rank_and_world", "gather_with_grad"]


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the default process group; (0, 1) when there is none."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def gather_with_grad(x: Tensor) -> Tensor:
    """All-gather ``x`` (B, ...) from every rank along dim 0 -> (world·B, ...), rank order.

    Differentiable: the gradient w.r.t. each gathered block flows back to the rank that owns it
    (summed over ranks), the local block included. With one rank or no process group it returns
    ``x`` itself. Every rank must pass the same shape.
    """
    _, world = rank_and_world()
    if world == 1:
        return x
    from torch.distributed.nn import functional as dist_nn

    with warnings.catch_warnings():
        # Deprecated in favour of a private functional-collectives API; this public one has had
        # the same semantics since torch 1.8, so keep it and silence the per-step warning.
        warnings.simplefilter("ignore", category=UserWarning)
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        parts = dist_nn.all_gather(x)
    return torch.cat(parts, dim=0)
