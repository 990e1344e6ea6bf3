"""Cement margin (logit and hinge modes) and the gradient-share diagnostics."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from argent.config import CementConfig, VariantConfig
from argent.losses import Objective
from argent.losses.cement import gradient_share, hinge_loss, margins
from argent.losses.contrastive import contrastive_loss
from tests.fixtures import ref_contrastive_direction, ref_sim

B, D = 6, 5
SCALE = 5.0


def _t(seed: int, n: int = B, scale: float = 0.7) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(n, D, generator=g, dtype=torch.float64)


def _variant(geometry="lorentz", **cement) -> VariantConfig:
    return VariantConfig(geometry=geometry, hard_negatives="concrete", cement=CementConfig(**cement))


def _call(variant, emb, hard, **kw):
    return Objective(variant)(emb, curv=torch.tensor(1.0, dtype=torch.float64),
                              logit_scale=torch.tensor(SCALE, dtype=torch.float64),
                              geometry=variant.geometry, hard=hard, **kw)


def _batch(seed: int):
    emb = {"image": _t(seed), "text": _t(seed + 1)}
    hard = {"text": _t(seed + 2), "concreteness": torch.tensor([0.0, 0.2, 0.45, 0.6, 0.9, 1.0], dtype=torch.float64),
            "mask": torch.tensor([True, True, False, True, True, True])}
    return emb, hard


def test_margin_directions():
    c = torch.tensor([0.0, 0.25, 1.0])
    inc = margins(c, CementConfig(margin_max=0.2, margin_direction="increasing"))
    dec = margins(c, CementConfig(margin_max=0.2, margin_direction="decreasing"))
    torch.testing.assert_close(inc, torch.tensor([0.0, 0.05, 0.2]))
    torch.testing.assert_close(dec, torch.tensor([0.2, 0.15, 0.0]))


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_logit_margin_matches_reference(geometry):
    emb, hard = _batch(0)
    out = _call(_variant(geometry, enabled=True, margin_mode="logit", margin_max=0.3), emb, hard)
    extra = []
    for i in range(B):
        extra.append([SCALE * (ref_sim(emb["image"][i], hard["text"][j], geometry, 1.0)
                               + (0.3 * float(hard["concreteness"][i]) if j == i else 0.0))
                      for j in range(B) if hard["mask"][j]])
    it = ref_contrastive_direction(emb["image"], emb["text"], SCALE, geometry, 1.0, extra=extra)
    ti = ref_contrastive_direction(emb["text"], emb["image"], SCALE, geometry, 1.0)
    assert out.terms["contrastive/image_text"].item() == pytest.approx(it, abs=1e-6)
    assert out.terms["contrastive"].item() == pytest.approx((it + ti) / 2, abs=1e-6)
    assert "cement_hinge" not in out.terms  # the logit margin lives inside the contrastive term


def test_zero_margin_is_the_plain_hard_negative_loss():
    emb, hard = _batch(1)
    zero = _call(_variant(enabled=True, margin_mode="logit", margin_max=0.0), emb, hard)
    plain = _call(_variant(enabled=False), emb, hard)
    assert zero.total.item() == plain.total.item()
    zero_h = _call(_variant(enabled=True, margin_mode="hinge", margin_max=0.0), emb, hard)
    assert zero_h.terms["contrastive"].item() == plain.total.item()
    # and a positive margin does change it, so the comparison above can fail
    assert _call(_variant(enabled=True, margin_max=0.5), emb, hard).total.item() > plain.total.item()


def test_hinge_matches_reference():
    emb, hard = _batch(2)
    v = _variant(enabled=True, margin_mode="hinge", margin_max=2.0, hinge_weight=0.2)
    out = _call(v, emb, hard)
    vals = []
    for i in range(B):
        if hard["mask"][i]:
            gap = ref_sim(emb["image"][i], emb["text"][i], "lorentz", 1.0) - ref_sim(emb["image"][i], hard["text"][i], "lorentz", 1.0)
            vals.append(max(0.0, 2.0 * float(hard["concreteness"][i]) - gap))
    assert any(v > 0 for v in vals) and any(v == 0 for v in vals)
    raw = sum(vals) / len(vals)
    assert out.terms["cement_hinge_raw"].item() == pytest.approx(raw, abs=1e-6)
    assert out.terms["cement_hinge"].item() == pytest.approx(0.2 * raw, abs=1e-6)
    plain = _call(_variant(enabled=False), emb, hard)
    assert out.total.item() == pytest.approx(plain.total.item() + 0.2 * raw, abs=1e-9)


def test_hinge_without_any_negative_is_zero():
    pos = torch.tensor([0.1, 0.2], requires_grad=True)
    value = hinge_loss(pos, torch.tensor([0.5, 0.6]), torch.tensor([1.0, 1.0]), torch.tensor([False, False]))
    assert value.item() == 0.0
    value.backward()  # still attached to the graph
    assert torch.all(pos.grad == 0)


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_logit_margin_gradcheck(geometry):
    torch.manual_seed(0)
    image, text, hard_t = (_t(s, n=3).requires_grad_(True) for s in (10, 11, 12))
    mask = torch.tensor([True, False, True])
    margin = torch.tensor([0.05, 0.1, 0.3], dtype=torch.float64)

    def f(i, t, h):
        return contrastive_loss({"image": i, "text": t}, geometry=geometry, curv=0.8,
                                logit_scale=torch.tensor(3.0, dtype=torch.float64), four_term=False,
                                hard_text=h, hard_mask=mask, hard_margin=margin).loss

    assert torch.autograd.gradcheck(f, (image, text, hard_t), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("mode", ["logit", "hinge"])
def test_objective_with_cement_gradcheck(mode):
    emb, hard = _batch(3)
    hard = {k: x[:4] for k, x in hard.items()}  # 4 rows keep gradcheck quick
    v = _variant(enabled=True, margin_mode=mode, margin_max=0.8)

    def f(i, t, h):
        return _call(v, {"image": i, "text": t}, {**hard, "text": h}, with_diagnostics=False).total

    args = tuple(x[:4].clone().requires_grad_(True) for x in (emb["image"], emb["text"], hard["text"]))
    assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-5)


# ---- gradient-share diagnostics ----------------------------------------------------------------


def _expected_from_autograd(logits: torch.Tensor, targets, hard_index, mask, conc, n_real):
    z = logits.detach().clone().requires_grad_(True)
    F.cross_entropy(z, targets, reduction="sum").backward()  # row i's gradient is ∂L_i/∂z_i
    g = z.grad
    rows = torch.arange(z.shape[0])
    push = -g[rows, targets]  # 1 − p_ii
    r = g[rows, hard_index] / push
    batch_neg = g[:, :n_real].clone()
    batch_neg[rows, targets] = 0
    exp = {
        "grad/hard_share": r[mask].mean().item(),
        "grad/norm_hard": g[:, n_real:].norm(dim=1).mean().item(),
        "grad/norm_batch_neg": batch_neg.norm(dim=1).mean().item(),
        "grad/norm_pos": push.mean().item(),
    }
    p_pos = 1 - push
    easy = p_pos > 0.9
    exp["grad/easy_rows"] = easy.double().mean().item()
    l1 = g.abs().sum(1)
    exp["grad/easy_mass"] = (l1[easy].sum() / l1.sum()).item()
    for lo, hi in ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)):
        sel = mask & (conc >= lo) & ((conc < hi) if hi < 1 else (conc <= hi))
        if sel.any():
            exp[f"grad/hard_share_c{lo:.2f}-{hi:.2f}"] = r[sel].mean().item()
    return exp


def test_gradient_share_against_autograd():
    g = torch.Generator().manual_seed(5)
    n, n_real = 12, 12
    logits = 4.0 * torch.randn(n, 2 * n_real, generator=g, dtype=torch.float64)
    logits[torch.arange(n), torch.arange(n)] += torch.linspace(0, 12, n, dtype=torch.float64)  # some easy rows
    mask = torch.rand(n, generator=g) > 0.25
    logits[:, n_real:][:, ~mask] = float("-inf")
    targets = torch.arange(n)
    hard_index = targets + n_real
    conc = torch.rand(n, generator=g, dtype=torch.float64)
    conc[0] = 1.0  # the top edge falls in the last bin
    got = gradient_share(logits, targets, hard_index, mask, conc, hard_columns_from=n_real)
    exp = _expected_from_autograd(logits, targets, hard_index, mask, conc, n_real)
    assert 0 < exp["grad/easy_rows"] < 1
    assert set(got) == set(exp)
    for k, v in exp.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k


def test_objective_diagnostics_against_autograd_on_reference_logits():
    emb, hard = _batch(4)
    v = _variant(enabled=True, margin_mode="logit", margin_max=0.3)
    out = _call(v, emb, hard)
    mask, conc = hard["mask"], hard["concreteness"]
    rows = []
    for i in range(B):
        row = [SCALE * ref_sim(emb["image"][i], emb["text"][j], "lorentz", 1.0) for j in range(B)]
        row += [SCALE * (ref_sim(emb["image"][i], hard["text"][j], "lorentz", 1.0) + (0.3 * float(conc[i]) if j == i else 0.0))
                if mask[j] else -math.inf for j in range(B)]
        rows.append(row)
    logits = torch.tensor(rows, dtype=torch.float64)
    targets = torch.arange(B)
    exp = _expected_from_autograd(logits, targets, targets + B, mask, conc, B)
    for k, val in exp.items():
        assert out.diagnostics[k] == pytest.approx(val, rel=1e-6, abs=1e-9), k
    assert out.diagnostics["hard/rows"] == pytest.approx(5 / 6)
    assert out.diagnostics["cement/margin_mean"] == pytest.approx(0.3 * conc[mask].mean().item())


def test_logit_margin_raises_the_hard_share():
    emb, hard = _batch(6)
    plain = _call(_variant(enabled=False), emb, hard).diagnostics["grad/hard_share"]
    cement = _call(_variant(enabled=True, margin_max=0.5), emb, hard).diagnostics["grad/hard_share"]
    assert cement > plain
