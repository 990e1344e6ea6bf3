"""Lorentz geometry against independent computations (full (D+1)-coordinates, Minkowski metric)."""

import math

import pytest
import torch

from argent import geometry as G

CURVS = [0.1, 1.0, 3.0]


def lift(x: torch.Tensor, c: float) -> torch.Tensor:
    """Space part -> full hyperboloid point [x_t, x̃]."""
    return torch.cat([torch.sqrt(1 / c + (x * x).sum(-1, keepdim=True)), x], dim=-1)


def minkowski(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return -u[..., 0] * v[..., 0] + (u[..., 1:] * v[..., 1:]).sum(-1)


def rand_points(n: int, d: int = 5, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64) * scale


@pytest.mark.parametrize("c", CURVS)
def test_exp_map_lands_on_the_hyperboloid_and_log_inverts_it(c):
    v = rand_points(32, scale=0.7)
    x = G.exp_map0(v, c)
    full = lift(x, c)
    assert torch.allclose(minkowski(full, full), torch.full((32,), -1 / c, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(G.log_map0(x, c), v, atol=1e-9)
    # The geodesic distance from the origin equals the tangent norm (exp is radial isometry).
    assert torch.allclose(G.dist0(x, c), v.norm(dim=-1), atol=1e-9)


@pytest.mark.parametrize("c", CURVS)
def test_dist0_matches_the_distance_formula_from_the_origin(c):
    x = rand_points(16, scale=2.0)
    origin = torch.zeros(1, 5, dtype=torch.float64)
    via_dist = G.pairwise_dist(origin, x, c)[0]
    closed = torch.asinh(math.sqrt(c) * x.norm(dim=-1)) / math.sqrt(c)
    assert torch.allclose(G.dist0(x, c), closed, atol=1e-10)
    assert torch.allclose(via_dist, closed, atol=1e-7)


@pytest.mark.parametrize("c", CURVS)
def test_distances_are_a_metric(c):
    x, y, z = rand_points(12, seed=1), rand_points(12, seed=2), rand_points(12, seed=3)
    pd = G.pairwise_dist(x, y, c)
    assert torch.allclose(pd.diagonal(), G.paired_dist(x, y, c), atol=1e-12)
    assert torch.allclose(G.pairwise_dist(y, x, c), pd.T, atol=1e-12)
    # Independent: arcosh(-c<x,y>_L) from full Minkowski coordinates.
    fx, fy = lift(x, c), lift(y, c)
    ref = torch.acosh((-c * minkowski(fx[:, None], fy[None])).clamp(min=1)) / math.sqrt(c)
    assert torch.allclose(pd, ref, atol=1e-9)
    assert (G.paired_dist(x, z, c) <= G.paired_dist(x, y, c) + G.paired_dist(y, z, c) + 1e-9).all()


def tangent_at(p: torch.Tensor, q: torch.Tensor, c: float) -> torch.Tensor:
    """Log map at p of q, in full coordinates (independent of the closed-form angle)."""
    fp, fq = lift(p, c), lift(q, c)
    inner = minkowski(fp, fq)
    dist = torch.acosh((-c * inner).clamp(min=1)) / math.sqrt(c)
    u = fq + c * inner[..., None] * fp  # component of q orthogonal to p
    return dist[..., None] * u / torch.sqrt(minkowski(u, u)).clamp(min=1e-300)[..., None]


@pytest.mark.parametrize("c", CURVS)
def test_exterior_angle_is_the_angle_between_log_map_tangents(c):
    p, q = rand_points(20, seed=4), rand_points(20, seed=5)
    # Outward direction at p: minus the tangent pointing back to the origin.
    outward = -tangent_at(p, torch.zeros_like(p), c)
    towards_q = tangent_at(p, q, c)
    cos = minkowski(outward, towards_q) / torch.sqrt(minkowski(outward, outward) * minkowski(towards_q, towards_q))
    expected = torch.acos(cos.clamp(-1, 1))
    assert torch.allclose(G.exterior_angle(p, q, c), expected, atol=1e-7)
    pw = G.pairwise_exterior_angle(p, q, c)
    assert torch.allclose(pw.diagonal(), G.exterior_angle(p, q, c), atol=1e-12)
    assert not torch.allclose(G.exterior_angle(q, p, c), G.exterior_angle(p, q, c), atol=1e-3)


def test_exterior_angle_of_points_further_out_on_the_same_ray_is_zero_and_inward_is_pi():
    p = torch.tensor([[0.5, 0.0, 0.0]], dtype=torch.float64)
    assert G.exterior_angle(p, 3 * p, 1.0).item() == pytest.approx(0.0, abs=1e-3)
    assert G.exterior_angle(p, 0.2 * p, 1.0).item() == pytest.approx(math.pi, abs=1e-3)


@pytest.mark.parametrize("c", CURVS)
def test_half_aperture_saturates_inside_the_norm_boundary(c):
    k = 0.1
    boundary = 2 * k / math.sqrt(c)
    inside = torch.tensor([[boundary * 0.5, 0.0], [boundary * 0.99, 0.0]], dtype=torch.float64)
    outside = torch.tensor([[boundary * 4, 0.0]], dtype=torch.float64)
    assert torch.allclose(G.half_aperture(inside, c, k), torch.full((2,), math.pi / 2, dtype=torch.float64), atol=1e-3)
    assert G.half_aperture(outside, c, k).item() == pytest.approx(math.asin(0.25), abs=1e-7)


@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("norm", [1e-6, 1e-3, 1.0, 1e2, 1e4])
def test_finite_values_and_gradients_at_extreme_norms_in_float32(c, norm):
    g = torch.Generator().manual_seed(7)
    base = torch.randn(6, 8, generator=g)
    x = (base / base.norm(dim=-1, keepdim=True) * norm).requires_grad_()
    y = (torch.randn(6, 8, generator=g) * norm).requires_grad_()
    curv = torch.tensor(c, requires_grad=True)
    outs = [
        G.exp_map0(x, curv), G.log_map0(x, curv), G.pairwise_dist(x, y, curv), G.paired_dist(x, x, curv),
        G.dist0(x, curv), G.half_aperture(x, curv), G.exterior_angle(x, y, curv), G.exterior_angle(x, x, curv),
        G.pairwise_exterior_angle(x, y, curv),
    ]
    for out in outs:
        assert torch.isfinite(out).all()
    total = sum(o.sum() for o in outs)
    gx, gy, gc = torch.autograd.grad(total, [x, y, curv])
    assert torch.isfinite(gx).all() and torch.isfinite(gy).all() and torch.isfinite(gc).all()


def test_exp_map_bounds_the_norm_in_float32():
    v = torch.full((1, 4), 1e6)
    x = G.exp_map0(v, 1.0)
    assert torch.isfinite(x).all() and x.norm() <= 2**15 * 1.0001
