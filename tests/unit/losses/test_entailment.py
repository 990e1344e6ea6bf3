"""Cone and adaptive entailment against independent float64 references (test_losses_reference)."""

from __future__ import annotations

import math

import pytest
import torch

from argent.config import INTRA_PAIRS, PAIR_TYPES, VariantConfig
from argent.losses.entailment import (
    PAIR_ITEMS,
    adaptive_loss,
    adaptive_weight,
    cone_loss,
    h_applies,
    huber,
    pair_losses,
    reduce_pairs,
)
from tests.fixtures import ref_aperture, ref_dist, ref_phi

D = 6


def _unit(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


def _random(n: int, seed: int, scale: float = 0.8) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(n, D, generator=g, dtype=torch.float64)


# ---- cone -----------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_cone_loss_zero_inside_cone_and_matches_reference_outside(c):
    parent = 1.5 * _unit(64, 0)  # ‖p̃‖ = 1.5 > 2K/√c for every c here: a proper cone
    # Children further out along the parent's ray, pushed sideways by amounts from 0.01 to 10.
    sideways = torch.logspace(-2, 1, 64, dtype=torch.float64)[:, None]
    child = 3.0 * parent + sideways * _random(64, 1, scale=1.0)
    phi, omega = ref_phi(parent, child, c), ref_aperture(parent, c, 0.1)
    inside = phi < omega - 1e-4
    outside = phi > omega + 1e-4
    assert inside.sum() >= 5 and outside.sum() >= 5, "the draw should cover both cases"
    loss = cone_loss(parent, child, c, k=0.1, eta=1.0)
    assert torch.all(loss[inside] == 0.0)
    torch.testing.assert_close(loss[outside], (phi - omega)[outside], rtol=0, atol=1e-6)


def test_cone_eta_scales_the_aperture():
    c, eta = 1.0, 0.7
    parent = 1.2 * _unit(32, 2)
    child = 2.0 * parent + torch.logspace(-2, 1, 32, dtype=torch.float64)[:, None] * _random(32, 3, scale=1.0)
    expect = torch.relu(ref_phi(parent, child, c) - eta * ref_aperture(parent, c, 0.1))
    assert (expect == 0).sum() >= 3 and (expect > 0).sum() >= 3
    torch.testing.assert_close(cone_loss(parent, child, c, k=0.1, eta=eta), expect, rtol=0, atol=1e-6)


def test_collapsed_cone_is_blind_to_outer_half_space_but_adaptive_loss_is_not():
    """ARGENT Fig. 2 case 1: a parent inside ‖p̃‖ < 2K/√c has a half-space 'cone'."""
    c, k = 1.0, 0.1
    parent = (0.1 * _unit(1, 4)).repeat(200, 1)  # ‖p̃‖ = 0.1 < 2K/√c = 0.2
    child = _random(200, 5, scale=1.0)
    phi = ref_phi(parent, child, c)
    outer = phi < math.pi / 2 - 0.01  # strictly inside the outer half-space
    assert outer.sum() >= 20
    parent_o, child_o = parent[outer].float(), child[outer].float().requires_grad_(True)

    cone = cone_loss(parent_o, child_o, c, k=k, eta=1.0)
    assert torch.all(cone == 0.0)

    ada = adaptive_loss(parent_o, child_o, c, use_h=False, beta=1.0)
    assert torch.all(ada > 0.0)
    (grad,) = torch.autograd.grad(ada.sum(), child_o)
    assert torch.all(grad.norm(dim=-1) > 1e-4)
    # and its value is Huber(φ) with the reference angle
    phi_o = phi[outer]
    expect = torch.where(phi_o < 1.0, 0.5 * phi_o**2, phi_o - 0.5)
    torch.testing.assert_close(ada.double(), expect, rtol=0, atol=2e-5)


# ---- adaptive weight h ------------------------------------------------------------------------


def test_h_vanishes_for_identical_points():
    x = _random(16, 6)
    for dtype, tol in ((torch.float32, 2e-3), (torch.float64, 2e-4)):
        h = adaptive_weight(x.to(dtype), x.to(dtype).clone(), 1.0)
        assert torch.all(h >= 0) and torch.all(h < tol)


def test_h_matches_reference_distance_and_tau():
    p, q = _random(16, 7), _random(16, 8)
    for tau in (1.0, 0.5):
        expect = 1.0 - torch.exp(-ref_dist(p, q, 2.0) / tau)
        torch.testing.assert_close(adaptive_weight(p, q, 2.0, tau=tau), expect, rtol=0, atol=1e-10)


def test_h_rules():
    assert h_applies("crop_image", "intra") and h_applies("phrase_text", "intra")
    assert not h_applies("text_image", "intra") and not h_applies("phrase_crop", "intra")
    assert all(h_applies(p, "any") for p in ("text_image", "phrase_crop", "crop_image", "phrase_text"))
    assert not any(h_applies(p, "none") for p in ("text_image", "phrase_crop", "crop_image", "phrase_text"))


def _emb(seed: int, n: int = 8) -> dict[str, torch.Tensor]:
    return {k: _random(n, seed + i) for i, k in enumerate(("image", "text", "crop", "phrase"))}


def test_intra_pairs_of_identical_items_cost_nothing_inter_pairs_have_h_one():
    v = VariantConfig(use_boxes=True, entailment="adaptive", adaptive_weight="intra",
                      entailment_pairs=["text_image", "phrase_crop", "crop_image", "phrase_text"])
    emb = _emb(10)
    emb["crop"] = emb["image"].clone()  # crop ⊒ image with identical points: h ≈ 0
    losses = pair_losses(emb, 1.0, v)
    assert losses["crop_image"].item() < 1e-5
    # Inter-modality pair under `intra`: h ≡ 1, the loss is Huber(φ) exactly.
    phi = ref_phi(emb["text"], emb["image"], 1.0)
    expect = torch.where(phi < 1.0, 0.5 * phi**2, phi - 0.5).mean()
    torch.testing.assert_close(losses["text_image"], expect, rtol=0, atol=1e-7)
    # Intra pair with distinct points: Huber(h·φ), h from the reference distance.
    h = 1.0 - torch.exp(-ref_dist(emb["phrase"], emb["text"], 1.0))
    u = h * ref_phi(emb["phrase"], emb["text"], 1.0)
    expect = torch.where(u < 1.0, 0.5 * u**2, u - 0.5).mean()
    torch.testing.assert_close(losses["phrase_text"], expect, rtol=0, atol=1e-7)


@pytest.mark.parametrize("mode", ["none", "any", "intra"])
def test_adaptive_weight_modes_per_pair(mode):
    v = VariantConfig(use_boxes=True, entailment="adaptive", adaptive_weight=mode, huber_beta=0.4,
                      entailment_pairs=["text_image", "phrase_crop", "crop_image", "phrase_text"])
    emb = _emb(20)
    got = pair_losses(emb, 0.7, v)
    items = {"text_image": ("text", "image"), "phrase_crop": ("phrase", "crop"),
             "crop_image": ("crop", "image"), "phrase_text": ("phrase", "text")}
    intra = {"crop_image", "phrase_text"}
    for pair, (pk, ck) in items.items():
        phi = ref_phi(emb[pk], emb[ck], 0.7)
        weighted = mode == "any" or (mode == "intra" and pair in intra)
        u = phi * (1.0 - torch.exp(-ref_dist(emb[pk], emb[ck], 0.7))) if weighted else phi
        expect = torch.where(u < 0.4, u**2 / 0.8, u - 0.2).mean()
        torch.testing.assert_close(got[pair], expect, rtol=0, atol=1e-7, msg=f"{mode} {pair}")


# ---- Huber forms, angle normalisation, detach -------------------------------------------------


@pytest.mark.parametrize("beta", [0.3, 1.0, 1.7])
def test_huber_forms_against_piecewise_formula(beta):
    u = torch.linspace(0.0, 3.5, 301, dtype=torch.float64)
    smooth = torch.tensor([x * x / (2 * beta) if x < beta else x - beta / 2 for x in u.tolist()], dtype=torch.float64)
    hub = torch.tensor([0.5 * x * x if x < beta else beta * (x - beta / 2) for x in u.tolist()], dtype=torch.float64)
    torch.testing.assert_close(huber(u, beta, "smooth_l1"), smooth, rtol=0, atol=1e-12)
    torch.testing.assert_close(huber(u, beta, "huber"), hub, rtol=0, atol=1e-12)
    if beta == 1.0:
        torch.testing.assert_close(huber(u, beta, "smooth_l1"), huber(u, beta, "huber"))
    else:
        assert not torch.allclose(huber(u, beta, "smooth_l1"), huber(u, beta, "huber"))


def test_adaptive_loss_huber_form_and_angle_norm():
    p, q = _random(32, 30), _random(32, 31, scale=1.5)
    phi = ref_phi(p, q, 1.0)
    got = adaptive_loss(p, q, 1.0, use_h=False, beta=0.5, form="huber", angle_norm="pi")
    u = phi / math.pi
    torch.testing.assert_close(got, torch.where(u < 0.5, 0.5 * u**2, 0.5 * (u - 0.25)), rtol=0, atol=1e-7)
    got = adaptive_loss(p, q, 1.0, use_h=False, beta=0.5, form="smooth_l1")
    torch.testing.assert_close(got, torch.where(phi < 0.5, phi**2, phi - 0.25), rtol=0, atol=1e-7)


def test_detach_h_switch_changes_only_the_gradient():
    p = _random(8, 40)
    q = _random(8, 41).requires_grad_(True)
    a = adaptive_loss(p, q, 1.0, use_h=True, detach_h=True)
    b = adaptive_loss(p, q, 1.0, use_h=True, detach_h=False)
    torch.testing.assert_close(a, b)
    (ga,) = torch.autograd.grad(a.sum(), q)
    (gb,) = torch.autograd.grad(b.sum(), q)
    assert not torch.allclose(ga, gb)
    assert adaptive_weight(p, q, 1.0, detach=True).grad_fn is None
    assert adaptive_weight(p, q, 1.0, detach=False).grad_fn is not None


# ---- reduction, precision ---------------------------------------------------------------------


def test_reduce_pairs():
    per = {"a": torch.tensor(1.0), "b": torch.tensor(2.0), "c": torch.tensor(4.5)}
    assert reduce_pairs(per, "sum").item() == 7.5
    assert reduce_pairs(per, "half_sum").item() == 3.75
    assert reduce_pairs(per, "mean").item() == 2.5
    with pytest.raises(ValueError):
        reduce_pairs(per, "max")


def test_geometry_runs_in_float32_under_autocast():
    p, q = _random(8, 50).bfloat16(), _random(8, 51).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cone = cone_loss(p, q, 1.0)
        ada = adaptive_loss(p, q, 1.0, use_h=True)
    assert cone.dtype == torch.float32 and ada.dtype == torch.float32
    # the same numbers as float32 inputs of the rounded bf16 values, outside autocast
    torch.testing.assert_close(ada, adaptive_loss(p.float(), q.float(), 1.0, use_h=True))


def test_missing_item_names_it():
    v = VariantConfig(use_boxes=True, entailment="cone", entailment_pairs=["phrase_crop"])
    with pytest.raises(KeyError, match="phrase"):
        pair_losses({"image": _random(2, 0), "text": _random(2, 1)}, 1.0, v)


def test_pair_items_cover_the_config_pair_types():
    assert set(PAIR_ITEMS) == set(PAIR_TYPES)
    modality = {"image": "image", "crop": "image", "text": "text", "phrase": "text"}
    for pair, (parent, child) in PAIR_ITEMS.items():
        assert pair == f"{parent}_{child}"  # named parent_child
        assert (modality[parent] == modality[child]) == (pair in INTRA_PAIRS)
