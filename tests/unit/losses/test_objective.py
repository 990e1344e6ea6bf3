"""Objective composition per variant (config/variants.yaml) and the geometry diagnostics."""

from __future__ import annotations

import math

import pytest
import torch

from argent.config import VariantConfig, load_variants, variant_from
from argent.losses import Objective, diagnostics
from tests.fixtures import ROOT, ref_aperture, ref_phi

CATALOGUE = load_variants(ROOT / "config" / "variants.yaml")
B, D = 6, 8
ALL_PAIRS = {"text_image", "phrase_crop", "crop_image", "phrase_text"}


def _emb(seed: int, dtype=torch.float64) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: (0.6 * torch.randn(B, D, generator=g, dtype=torch.float64)).to(dtype)
            for k in ("image", "text", "crop", "phrase")}


def _hard(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"text": 0.6 * torch.randn(B, D, generator=g, dtype=torch.float64),
            "concreteness": torch.rand(B, generator=g, dtype=torch.float64),
            "mask": torch.tensor([True, True, False, True, True, True])}


def _run(v: VariantConfig, emb, hard=None, c=1.0, s=10.0):
    return Objective(v)(emb, curv=torch.tensor(c, dtype=torch.float64), logit_scale=torch.tensor(s, dtype=torch.float64),
                        geometry=v.geometry, hard=hard)


def _expected_terms(raw: dict) -> set[str]:
    """What a catalogue entry names, read from its raw YAML fields (defaults of VariantConfig)."""
    boxes = raw.get("use_boxes", False)
    names = {"contrastive", "contrastive/image_text", "contrastive/text_image"}
    if boxes:
        names |= {"contrastive/crop_text", "contrastive/phrase_image"}
    if raw.get("entailment", "none") != "none":
        names |= {"entailment", "entailment_raw"} | {f"entailment/{p}" for p in raw.get("entailment_pairs", ["text_image"])}
    if raw.get("norm_reg_weight", 0.0) > 0:
        names |= {"norm_reg", "norm_reg_raw"}
    cement = raw.get("cement", {})
    if cement.get("enabled") and cement.get("margin_mode", "logit") == "hinge" and raw.get("hard_negatives", "none") != "none":
        names |= {"cement_hinge", "cement_hinge_raw"}
    return names


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_each_variant_computes_exactly_its_terms(name):
    v = variant_from(CATALOGUE, name)
    hard = _hard(1) if v.hard_negatives != "none" else None
    out = _run(v, _emb(0), hard)
    assert set(out.terms) == _expected_terms(CATALOGUE[name])
    weighted = out.weighted()
    assert out.total.item() == pytest.approx(sum(t.item() for t in weighted.values()), abs=1e-12)
    if "entailment" in out.terms:
        assert out.terms["entailment"].item() == pytest.approx(v.entailment_weight * out.terms["entailment_raw"].item())
    if "norm_reg" in out.terms:
        assert out.terms["norm_reg"].item() == pytest.approx(v.norm_reg_weight * out.terms["norm_reg_raw"].item())
    assert torch.isfinite(out.total)


def test_catalogue_spot_checks():
    terms = {name: set(_run(v, _emb(0), _hard(1) if v.hard_negatives != "none" else None).terms)
             for name in CATALOGUE for v in [variant_from(CATALOGUE, name)]}
    assert not any(t.startswith("entailment") for t in terms["clip"])
    assert "norm_reg" not in terms["argent_noreg"] and "norm_reg" in terms["argent"]
    assert {t for t in terms["meru"] if t.startswith("entailment/")} == {"entailment/text_image"}
    assert {t for t in terms["hycoclip"] if t.startswith("entailment/")} == {f"entailment/{p}" for p in ALL_PAIRS}
    assert "contrastive/crop_text" in terms["hycoclip"] and "contrastive/crop_text" not in terms["meru"]


def test_hycoclip_is_contrastive_plus_0p2_half_sum_of_cones_with_its_etas():
    v = variant_from(CATALOGUE, "hycoclip")
    emb = _emb(2)
    emb["image"] = 2.0 * emb["text"] + 0.3 * emb["image"]  # make some cones hold and some not
    out = _run(v, emb)
    items = {"text_image": ("text", "image", 0.7), "phrase_crop": ("phrase", "crop", 0.7),
             "crop_image": ("crop", "image", 1.2), "phrase_text": ("phrase", "text", 1.2)}
    per = {}
    for pair, (pk, ck, eta) in items.items():
        per[pair] = torch.relu(ref_phi(emb[pk], emb[ck], 1.0) - eta * ref_aperture(emb[pk], 1.0, 0.1)).mean().item()
        assert out.terms[f"entailment/{pair}"].item() == pytest.approx(per[pair], abs=1e-6), pair
    expect = out.terms["contrastive"].item() + 0.2 * 0.5 * sum(per.values())
    assert out.total.item() == pytest.approx(expect, abs=1e-6)


def test_argent_total_composition():
    v = variant_from(CATALOGUE, "argent")
    emb = _emb(3)
    out = _run(v, emb)
    norms = torch.cat([emb[k].norm(dim=-1) for k in ("image", "text", "crop", "phrase")])
    reg = (norms**2 - torch.log(norms)).mean().item()
    assert out.terms["norm_reg_raw"].item() == pytest.approx(reg, abs=1e-10)
    per = [out.terms[f"entailment/{p}"].item() for p in ALL_PAIRS]
    expect = out.terms["contrastive"].item() + 0.1 * 0.5 * sum(per) + 0.1 * reg
    assert out.total.item() == pytest.approx(expect, abs=1e-10)


def test_never_reads_the_variant_name():
    # Two configs with equal fields give equal losses whatever the catalogue calls them.
    a = variant_from(CATALOGUE, "hycoclip_adaent_any")
    b = VariantConfig(**{**a.__dict__, "description": "something else"})
    emb = _emb(4)
    assert _run(a, emb).total.item() == _run(b, emb).total.item()


def test_bad_calls_are_named():
    v = variant_from(CATALOGUE, "argent")
    emb = _emb(5)
    with pytest.raises(ValueError, match="geometry"):
        Objective(v)(emb, curv=torch.tensor(1.0), logit_scale=torch.tensor(10.0), geometry="euclidean")
    with pytest.raises(KeyError, match="crop"):
        _run(v, {"image": emb["image"], "text": emb["text"]})
    with pytest.raises(ValueError, match="hard_negatives"):
        _run(v, emb, _hard(0))


def test_bf16_autocast_inputs_are_computed_in_float32():
    v = variant_from(CATALOGUE, "argent_negs_cement")
    emb = {k: x.bfloat16() for k, x in _emb(6).items()}
    hard = {**_hard(7), "text": _hard(7)["text"].bfloat16()}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = Objective(v)(emb, curv=torch.tensor(1.0), logit_scale=torch.tensor(10.0), geometry="lorentz", hard=hard)
    assert out.total.dtype == torch.float32
    ref = Objective(v)({k: x.float() for k, x in emb.items()}, curv=torch.tensor(1.0), logit_scale=torch.tensor(10.0),
                       geometry="lorentz", hard={**hard, "text": hard["text"].float()})
    torch.testing.assert_close(out.total, ref.total)


# ---- geometry diagnostics ----------------------------------------------------------------------


def test_diagnostics_values():
    v = variant_from(CATALOGUE, "hycoclip")
    emb = _emb(8)
    emb["phrase"][:3] *= 0.05  # three phrases inside the collapse zone ‖p̃‖ < 2K/√c
    c = 2.0
    d = diagnostics(emb, torch.tensor(c), v)
    bound = 2 * 0.1 / math.sqrt(c)
    for parent in ("text", "phrase", "crop"):
        share = sum(float(n) < bound for n in emb[parent].norm(dim=-1)) / B
        assert d[f"collapse/{parent}"] == pytest.approx(share)
    assert d["collapse/phrase"] >= 0.5
    assert "collapse/image" not in d  # images are never parents
    items = {"text_image": ("text", "image"), "phrase_crop": ("phrase", "crop"),
             "crop_image": ("crop", "image"), "phrase_text": ("phrase", "text")}
    for pair, (pk, ck) in items.items():
        assert d[f"phi/{pair}"] == pytest.approx(ref_phi(emb[pk], emb[ck], c).mean().item(), abs=1e-6)
    for k in ("image", "text", "crop", "phrase"):
        norms = sorted(emb[k].norm(dim=-1).tolist())
        assert d[f"norm/{k}/mean"] == pytest.approx(sum(norms) / B)
        # linear interpolation between order statistics (numpy's default quantile)
        pos = 0.5 * (B - 1)
        median = norms[int(pos)] + (pos - int(pos)) * (norms[int(pos) + 1] - norms[int(pos)])
        assert d[f"norm/{k}/q50"] == pytest.approx(median)
        assert norms[0] <= d[f"norm/{k}/q05"] <= d[f"norm/{k}/q95"] <= norms[-1]


def test_diagnostics_without_boxes_and_euclidean():
    emb = _emb(9)
    d = diagnostics(emb, 1.0, variant_from(CATALOGUE, "meru"))
    assert {k for k in d if k.startswith("phi/")} == {"phi/text_image"}
    assert not any("crop" in k or "phrase" in k for k in d)
    d = diagnostics(emb, 1.0, variant_from(CATALOGUE, "clip"))
    assert not any(k.startswith(("phi/", "collapse/")) for k in d)
