"""ARGENT's norm regulariser ‖x̃‖² − log‖x̃‖."""

from __future__ import annotations

import math

import torch

from argent.losses.norm_reg import norm_reg


def test_minimum_at_one_over_sqrt2():
    direction = torch.tensor([0.6, 0.0, -0.8], dtype=torch.float64)
    radii = torch.linspace(0.05, 3.0, 5901, dtype=torch.float64)
    values = torch.stack([norm_reg([r * direction[None]]) for r in radii])
    best = radii[values.argmin()].item()
    assert abs(best - 1 / math.sqrt(2)) < 1e-3
    assert abs(values.min().item() - (0.5 + 0.5 * math.log(2))) < 1e-6
    assert abs(0.5 + 0.5 * math.log(2) - 0.847) < 1e-3


def test_gradient_vanishes_at_the_minimum_and_points_outward_inside():
    x = (torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64) / 2).requires_grad_(True)  # ‖x‖ = 1/√2
    (g,) = torch.autograd.grad(norm_reg([x]), x)
    assert g.abs().max().item() < 1e-12
    y = torch.tensor([[0.1, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(norm_reg([y]), y)
    assert g[0, 0].item() < 0  # descending the loss pushes a small point away from the origin


def test_mean_over_every_row_of_every_tensor():
    g = torch.Generator().manual_seed(0)
    parts = [torch.randn(n, 5, generator=g, dtype=torch.float64) for n in (3, 4, 1)]
    rows = [r for part in parts for r in part.tolist()]
    expect = sum(sum(v * v for v in r) - math.log(math.sqrt(sum(v * v for v in r))) for r in rows) / len(rows)
    assert abs(norm_reg(parts).item() - expect) < 1e-12


def test_origin_is_finite():
    x = torch.zeros(2, 4, requires_grad=True)
    value = norm_reg([x])
    assert abs(value.item() - (-math.log(1e-6))) < 1e-3
    (g,) = torch.autograd.grad(value, x)
    assert torch.isfinite(g).all()
