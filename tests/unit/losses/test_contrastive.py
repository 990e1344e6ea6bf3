"""Contrastive terms against hand-written loops, hard-negative columns, and the two-rank gather."""

from __future__ import annotations

import pytest
import torch
import torch.distributed
import torch.distributed.nn.functional

from argent.losses.contrastive import contrastive_loss
from argent.losses.gather import gather_with_grad, rank_and_world
from tests.fixtures import ref_contrastive_direction, ref_sim

B, D = 5, 6
SCALE = 7.0


def _emb(seed: int, n: int = B, items=("image", "text", "crop", "phrase")) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: 0.7 * torch.randn(n, D, generator=g, dtype=torch.float64) for k in items}


def _loss(emb, geometry, c=1.0, four_term=False, **kw):
    return contrastive_loss(emb, geometry=geometry, curv=c, logit_scale=torch.tensor(SCALE, dtype=torch.float64),
                            four_term=four_term, **kw)


@pytest.mark.parametrize("geometry,c", [("euclidean", 1.0), ("lorentz", 1.0), ("lorentz", 0.3)])
def test_two_term_matches_loops(geometry, c):
    emb = _emb(0)
    res = _loss(emb, geometry, c)
    it = ref_contrastive_direction(emb["image"], emb["text"], SCALE, geometry, c)
    ti = ref_contrastive_direction(emb["text"], emb["image"], SCALE, geometry, c)
    assert set(res.terms) == {"image_text", "text_image"}
    assert res.terms["image_text"].item() == pytest.approx(it, abs=1e-6)
    assert res.terms["text_image"].item() == pytest.approx(ti, abs=1e-6)
    assert res.loss.item() == pytest.approx((it + ti) / 2, abs=1e-6)


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_four_term_matches_loops(geometry):
    emb = _emb(1)
    res = _loss(emb, geometry, 1.0, four_term=True)
    e = emb
    expect = {
        "image_text": ref_contrastive_direction(e["image"], e["text"], SCALE, geometry, 1.0),
        "text_image": ref_contrastive_direction(e["text"], e["image"], SCALE, geometry, 1.0),
        "crop_text": ref_contrastive_direction(e["crop"], e["text"], SCALE, geometry, 1.0),
        "phrase_image": ref_contrastive_direction(e["phrase"], e["image"], SCALE, geometry, 1.0),
    }
    assert set(res.terms) == set(expect)  # no crop↔phrase term
    for k, v in expect.items():
        assert res.terms[k].item() == pytest.approx(v, abs=1e-6), k
    assert res.loss.item() == pytest.approx(sum(expect.values()) / 4, abs=1e-6)


def _hard_reference(emb, hard, mask, margin, geometry, c=1.0):
    """Image→text CE with [captions ; present negatives], margin on each row's own negative."""
    extra = []
    for i in range(B):
        row = []
        for j in range(B):
            if mask[j]:
                m = float(margin[i]) if j == i else 0.0
                row.append(SCALE * (ref_sim(emb["image"][i], hard[j], geometry, c) + m))
        extra.append(row)
    return ref_contrastive_direction(emb["image"], emb["text"], SCALE, geometry, c, extra=extra)


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_hard_negative_columns_only_in_image_to_text(geometry):
    emb = _emb(2)
    hard = _emb(3, items=("text",))["text"]
    mask = torch.tensor([True, False, True, True, False])
    margin = torch.linspace(0.0, 0.4, B, dtype=torch.float64)
    plain = _loss(emb, geometry, four_term=True)
    res = _loss(emb, geometry, four_term=True, hard_text=hard, hard_mask=mask, hard_margin=margin)
    assert res.image_text_logits.shape == (B, 2 * B)
    assert res.hard_index.tolist() == [B + i for i in range(B)]
    assert torch.isneginf(res.image_text_logits[:, B:][:, ~mask]).all()
    assert res.terms["image_text"].item() == pytest.approx(_hard_reference(emb, hard, mask, margin, geometry), abs=1e-6)
    for k in ("text_image", "crop_text", "phrase_image"):  # untouched by the negatives
        assert res.terms[k].item() == plain.terms[k].item(), k
    # without a margin and with every negative present
    res0 = _loss(emb, geometry, hard_text=hard)
    ref0 = _hard_reference(emb, hard, [True] * B, [0.0] * B, geometry)
    assert res0.terms["image_text"].item() == pytest.approx(ref0, abs=1e-6)


def test_masked_rows_contribute_nothing():
    emb = _emb(4)
    hard = _emb(5, items=("text",))["text"].requires_grad_(True)
    mask = torch.tensor([False, True, False, True, True])
    res = _loss(emb, "lorentz", hard_text=hard, hard_mask=mask)
    (g,) = torch.autograd.grad(res.loss, hard)
    assert torch.all(g[~mask] == 0) and torch.all(g[mask].abs().sum(-1) > 0)
    other = hard.detach().clone()
    other[~mask] = 5.0  # garbage where there is no negative
    assert _loss(emb, "lorentz", hard_text=other, hard_mask=mask).loss.item() == res.loss.item()
    # all rows masked: the plain loss
    none = _loss(emb, "lorentz", hard_text=hard, hard_mask=torch.zeros(B, dtype=torch.bool))
    assert none.loss.item() == pytest.approx(_loss(emb, "lorentz").loss.item(), abs=1e-12)


# ---- two ranks in one process --------------------------------------------------------------


class FakeWorld:
    """Stands in for a 2-rank process group: the all-gather of rank r's shard returns the slices
    of registered full-batch tensors (so gradients flow to every shard, as the real collective's
    reduce-scatter backward does)."""

    def __init__(self, world: int) -> None:
        self.world, self.rank, self.fulls = world, 0, []

    def register(self, *fulls: torch.Tensor) -> None:
        self.fulls.extend(fulls)

    def all_gather(self, x: torch.Tensor, group=None):
        b = x.shape[0]
        for full in self.fulls:
            if full.shape == (b * self.world, *x.shape[1:]):
                mine = full[self.rank * b:(self.rank + 1) * b]
                if torch.equal(mine.detach().to(x.dtype), x.detach()):
                    parts = list(full.to(x.dtype).split(b))
                    parts[self.rank] = x
                    return tuple(parts)
        raise AssertionError("all_gather of a tensor the test did not register")


@pytest.fixture
def fake_world(monkeypatch):
    world = FakeWorld(2)
    monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: world.rank)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda group=None: world.world)
    monkeypatch.setattr(torch.distributed.nn.functional, "all_gather", world.all_gather)
    return world


def test_gather_helpers_without_process_group():
    x = torch.randn(3, 2)
    assert rank_and_world() == (0, 1)
    assert gather_with_grad(x) is x


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_two_rank_gather_equals_full_batch(geometry, fake_world):
    full = _emb(6, n=2 * B)
    full_hard = _emb(7, n=2 * B, items=("text",))["text"]
    mask = torch.tensor([True, False, True, True, True, True, True, False, True, True])
    margin = torch.linspace(0.0, 0.3, 2 * B, dtype=torch.float64)

    def leaves():
        e = {k: v.clone().requires_grad_(True) for k, v in full.items()}
        return e, full_hard.clone().requires_grad_(True)

    # single process on the concatenated batch
    world = fake_world.world
    fake_world.world = 1
    e1, h1 = leaves()
    single = _loss(e1, geometry, four_term=True, hard_text=h1, hard_mask=mask, hard_margin=margin)
    single.loss.backward()
    fake_world.world = world

    # two ranks, each with its B local rows
    e2, h2 = leaves()
    fake_world.register(*e2.values(), h2, mask.to(torch.float64))
    losses = []
    for r in range(2):
        fake_world.rank = r
        rows = slice(r * B, (r + 1) * B)
        res = _loss({k: v[rows] for k, v in e2.items()}, geometry, four_term=True,
                    hard_text=h2[rows], hard_mask=mask[rows], hard_margin=margin[rows])
        assert res.targets.tolist() == list(range(r * B, (r + 1) * B))
        assert res.image_text_logits.shape == (B, 4 * B)
        losses.append(res.loss)
    mean = (losses[0] + losses[1]) / 2
    mean.backward()

    assert mean.item() == pytest.approx(single.loss.item(), abs=1e-12)
    for k in full:
        torch.testing.assert_close(e2[k].grad, e1[k].grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(h2.grad, h1.grad, rtol=0, atol=1e-12)
