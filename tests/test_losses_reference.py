"""Independent float64 reference computations for the loss tests (imported by test_losses_*.py).

They work in full (D+1)-dimensional Lorentz coordinates and plain Python loops, sharing no code
with argent.losses or argent.geometry. The tests below check the references themselves on cases
with a known answer.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def ambient(x: Tensor, c: float) -> Tensor:
    """Space part (..., D) -> full hyperboloid point (..., D+1) = [x_t, x̃], ⟨x, x⟩_L = −1/c."""
    x = x.double()
    xt = torch.sqrt(1.0 / c + (x**2).sum(-1, keepdim=True))
    return torch.cat([xt, x], dim=-1)


def minkowski(a: Tensor, b: Tensor) -> Tensor:
    return -a[..., 0] * b[..., 0] + (a[..., 1:] * b[..., 1:]).sum(-1)


def ref_dist(x: Tensor, y: Tensor, c: float) -> Tensor:
    """Row-wise geodesic distance, arcosh(−c⟨x, y⟩_L)/√c (no clamp beyond ≥ 1 for rounding)."""
    arg = (-c * minkowski(ambient(x, c), ambient(y, c))).clamp(min=1.0)
    return torch.acosh(arg) / math.sqrt(c)


def ref_phi(parent: Tensor, child: Tensor, c: float) -> Tensor:
    """Exterior angle at the parent as the Lorentz-metric angle between two tangent vectors at p:
    the outward radial direction (minus the direction towards the origin) and the direction to the
    child. Tangent direction at p towards y: y + c⟨p, y⟩_L·p."""
    p, q = ambient(parent, c), ambient(child, c)
    origin = torch.zeros_like(p)
    origin[..., 0] = 1.0 / math.sqrt(c)

    def towards(y: Tensor) -> Tensor:
        return y + c * minkowski(p, y)[..., None] * p

    a, b = -towards(origin), towards(q)
    cos = minkowski(a, b) / torch.sqrt(minkowski(a, a) * minkowski(b, b))
    return torch.acos(cos.clamp(-1.0, 1.0))


def ref_aperture(parent: Tensor, c: float, k: float) -> Tensor:
    """asin(2K/(√c‖p̃‖)), saturating at π/2 inside the norm boundary."""
    arg = 2.0 * k / (math.sqrt(c) * parent.double().norm(dim=-1))
    return torch.asin(arg.clamp(max=1.0))


def ref_sim(x: Tensor, y: Tensor, geometry: str, c: float) -> float:
    """σ of two single vectors (D,): cosine or −d."""
    x, y = x.double(), y.double()
    if geometry == "euclidean":
        return float((x @ y) / (x.norm() * y.norm()))
    return -float(ref_dist(x[None], y[None], c)[0])


def ref_ce(row: list[float], target: int) -> float:
    """Cross-entropy of one row of logits (Python floats), log-sum-exp done by hand."""
    top = max(row)
    lse = top + math.log(sum(math.exp(z - top) for z in row))
    return lse - row[target]


def ref_contrastive_direction(rows: Tensor, cols: Tensor, scale: float, geometry: str, c: float,
                              extra: list[list[float]] | None = None) -> float:
    """Mean CE of rows[i] against all cols, target i; ``extra[i]`` = extra logits appended to row i."""
    total = 0.0
    for i in range(rows.shape[0]):
        row = [scale * ref_sim(rows[i], cols[j], geometry, c) for j in range(cols.shape[0])]
        if extra is not None:
            row += extra[i]
        total += ref_ce(row, i)
    return total / rows.shape[0]


# ---- the references against known answers --------------------------------------------------


def test_ref_phi_is_zero_for_radial_child_and_pi_for_inner_child():
    p = torch.tensor([[0.6, 0.8, 0.0]], dtype=torch.float64)
    assert ref_phi(p, 2.0 * p, 1.0).item() < 1e-6  # straight outward along the ray through p
    assert abs(ref_phi(p, 0.5 * p, 1.0).item() - math.pi) < 1e-6  # back towards the origin


def test_ref_phi_right_angle_at_origin_limit():
    # A parent near the origin: hyperbolic geometry is nearly Euclidean there, and a child moved
    # perpendicular to the radial direction sits at ~90 degrees.
    p = torch.tensor([[1e-4, 0.0]], dtype=torch.float64)
    q = torch.tensor([[1e-4, 1e-4]], dtype=torch.float64)
    assert abs(ref_phi(p, q, 1.0).item() - math.pi / 2) < 1e-3


def test_ref_dist_radial_matches_asinh():
    x = torch.tensor([[0.3, -0.4]], dtype=torch.float64)  # ‖x‖ = 0.5
    for c in (0.1, 1.0, 3.0):
        expect = math.asinh(math.sqrt(c) * 0.5) / math.sqrt(c)
        assert abs(ref_dist(torch.zeros_like(x), x, c).item() - expect) < 1e-10


def test_ref_ce_matches_uniform_case():
    assert abs(ref_ce([0.0, 0.0, 0.0, 0.0], 2) - math.log(4)) < 1e-12
