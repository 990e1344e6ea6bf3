"""The independent float64 references of the loss tests (tests.fixtures: full (D+1)-dimensional Lorentz
coordinates and plain Python loops, no code shared with argent.losses or argent.geometry), checked
themselves on cases with a known answer.
"""

from __future__ import annotations

import math

import torch

from tests.fixtures import ref_ce, ref_dist, ref_phi

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
