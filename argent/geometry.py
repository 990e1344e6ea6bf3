"""Lorentz model of hyperbolic space: pure tensor functions, no state.

Points on the hyperboloid {x : <x, x>_L = -1/c, x_t > 0} of curvature -c are stored as their
space components x̃ ∈ R^D only; the time component x_t = sqrt(1/c + ||x̃||²) is recomputed from
the current curvature (``time_component``). Every function takes ``curv`` (c > 0, a float or a
0-d tensor) explicitly. Entailment functions take ``(parent, child)`` in that order.

Clamps use dtype-aware bounds (``eps``): in float32, 1 ± 1e-8 rounds to exactly 1, so the
reference code's 1e-8 bounds would do nothing there and the singular derivatives of arcosh,
arccos and asin at 1 would be reached by near-identical points.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = [
    "eps",
    "time_component",
    "exp_map0",
    "log_map0",
    "pairwise_inner",
    "paired_inner",
    "pairwise_dist",
    "paired_dist",
    "dist0",
    "half_aperture",
    "exterior_angle",
    "pairwise_exterior_angle",
]

# exp_map0 bounds sqrt(c)·||v|| by asinh(2^15) so that sinh cannot overflow float32 (and its
# gradient stays finite); the space norm is then at most 2^15 / sqrt(c).
_MAX_SINH_ARG = math.asinh(2.0**15)


def eps(dtype: torch.dtype) -> float:
    """Clamp margin for ``dtype``: 1e-6 in float32 (and lower precisions), 1e-8 in float64."""
    return 1e-8 if dtype == torch.float64 else 1e-6


def _sqrt_c(curv: float | Tensor, like: Tensor) -> Tensor:
    return torch.as_tensor(curv, dtype=like.dtype, device=like.device).sqrt()


def time_component(x: Tensor, curv: float | Tensor) -> Tensor:
    """Time component x_t = sqrt(1/c + ||x̃||²). x: (..., D) -> (...)."""
    return torch.sqrt(1.0 / torch.as_tensor(curv, dtype=x.dtype, device=x.device) + (x * x).sum(-1))


def exp_map0(v: Tensor, curv: float | Tensor) -> Tensor:
    """Exponential map at the origin: tangent vector v (..., D) -> space components (..., D).

    x̃ = sinh(sqrt(c)||v||) · v / (sqrt(c)||v||).
    """
    e = eps(v.dtype)
    u = _sqrt_c(curv, v) * v.norm(dim=-1, keepdim=True)
    # Lower clamp keeps the division finite at v = 0 (sinh(u)/u -> 1 there); the upper one
    # keeps sinh finite in float32.
    sinh_u = torch.sinh(u.clamp(min=e, max=_MAX_SINH_ARG))
    return sinh_u * v / u.clamp(min=e)


def log_map0(x: Tensor, curv: float | Tensor) -> Tensor:
    """Logarithmic map at the origin: space components (..., D) -> tangent vector (..., D).

    v = arcosh(sqrt(1 + c||x̃||²)) · x̃ / (sqrt(c)||x̃||); the inverse of ``exp_map0``.
    """
    e = eps(x.dtype)
    r = _sqrt_c(curv, x) * x.norm(dim=-1, keepdim=True)
    # asinh(r) == arcosh(sqrt(1 + r²)) without the arcosh singularity at 1 (r -> 0).
    return torch.asinh(r) * x / r.clamp(min=e)


def pairwise_inner(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Lorentz inner product of every row of x (B1, D) with every row of y (B2, D) -> (B1, B2)."""
    return x @ y.T - time_component(x, curv)[:, None] * time_component(y, curv)[None, :]


def paired_inner(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Lorentz inner product of row i of x with row i of y: (..., D), (..., D) -> (...)."""
    return (x * y).sum(-1) - time_component(x, curv) * time_component(y, curv)


def _dist_from_inner(inner: Tensor, curv: float | Tensor) -> Tensor:
    sqrt_c = _sqrt_c(curv, inner)
    # -c<x,y>_L >= 1 in exact arithmetic; rounding can push it below 1 (and arcosh' is infinite
    # at 1), so clamp to 1 + eps. Distances under ~sqrt(2·eps)/sqrt(c) therefore read as that floor.
    return torch.acosh((-(sqrt_c**2) * inner).clamp(min=1.0 + eps(inner.dtype))) / sqrt_c


def pairwise_dist(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Geodesic distance between every row of x (B1, D) and of y (B2, D) -> (B1, B2)."""
    return _dist_from_inner(pairwise_inner(x, y, curv), curv)


def paired_dist(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Geodesic distance between row i of x and row i of y: (..., D), (..., D) -> (...)."""
    return _dist_from_inner(paired_inner(x, y, curv), curv)


def dist0(x: Tensor, curv: float | Tensor) -> Tensor:
    """Distance from the origin, asinh(sqrt(c)||x̃||)/sqrt(c): (..., D) -> (...)."""
    sqrt_c = _sqrt_c(curv, x)
    return torch.asinh(sqrt_c * x.norm(dim=-1)) / sqrt_c


def half_aperture(x: Tensor, curv: float | Tensor, min_radius: float = 0.1) -> Tensor:
    """Half-aperture of the entailment cone at x: asin(2K / (sqrt(c)||x̃||)), (..., D) -> (...).

    ``min_radius`` is the cone constant K. Inside ||x̃|| <= 2K/sqrt(c) the asin argument reaches 1,
    so it is clamped to 1 - eps: the aperture saturates just under π/2 (the cone becomes a
    half-space, "cone collapse") and the asin gradient stays finite.
    """
    e = eps(x.dtype)
    arg = 2.0 * min_radius / (_sqrt_c(curv, x) * x.norm(dim=-1) + e)
    return torch.asin(arg.clamp(min=-1.0 + e, max=1.0 - e))


def _angle(p: Tensor, q: Tensor, p_time: Tensor, q_time: Tensor, k: Tensor) -> Tensor:
    """Shared closed form; all arguments broadcast. k = c<p,q>_L <= -1."""
    e = eps(p.dtype)
    numer = q_time + k * p_time
    # k² - 1 -> 0 as q -> p; the clamp keeps sqrt's gradient finite there. The angle itself is
    # ill-conditioned at q = p (ARGENT's h weight is ~0 exactly there).
    denom = p.norm(dim=-1) * torch.sqrt((k * k - 1.0).clamp(min=e)) + e
    # Rounding can push |cos| past 1, where acos is undefined and its gradient infinite.
    return torch.acos((numer / denom).clamp(min=-1.0 + e, max=1.0 - e))


def exterior_angle(parent: Tensor, child: Tensor, curv: float | Tensor) -> Tensor:
    """Exterior angle φ(p, q) at the parent, row i with row i: (..., D), (..., D) -> (...).

    The angle at p between the geodesic continuing outward from the origin through p and the
    geodesic p -> q; q lies in p's entailment cone iff φ(p, q) <= half_aperture(p).
    """
    c = torch.as_tensor(curv, dtype=parent.dtype, device=parent.device)
    k = c * paired_inner(parent, child, curv)
    return _angle(parent, child, time_component(parent, curv), time_component(child, curv), k)


def pairwise_exterior_angle(parent: Tensor, child: Tensor, curv: float | Tensor) -> Tensor:
    """Exterior angle for every parent (B1, D) and every child (B2, D) -> (B1, B2)."""
    c = torch.as_tensor(curv, dtype=parent.dtype, device=parent.device)
    k = c * pairwise_inner(parent, child, curv)
    return _angle(
        parent[:, None, :],
        child[None, :, :],
        time_component(parent, curv)[:, None],
        time_component(child, curv)[None, :],
        k,
    )
