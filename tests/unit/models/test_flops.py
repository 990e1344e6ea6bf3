"""argent/models/flops.py: the FLOP model of a training step reproduces docs/scaling.md §4 "Step cost"."""

import pytest

from argent.config import load_variants, model_from, variant_from
from argent.models.flops import image_tokens, items_per_sample, layer_forward_flops, step_flops, step_seconds
from tests.fixtures import ROOT

CATALOGUE = load_variants(ROOT / "config" / "variants.yaml")

# docs/scaling.md §4: forward GFLOP per image; training TFLOP per step of 768 (CLIP/MERU, HyCoCLIP/ARGENT)
IMAGE_GFLOP = {"S": 9.1, "B": 34.9, "L": 122.8}
STEP_TFLOP = {"S": (34.7, 69.3), "B": (94.1, 188.3), "L": (296.7, 593.3)}


@pytest.mark.parametrize("size", ["S", "B", "L"])
def test_the_docs_step_cost_table(size):
    model = model_from(size)
    assert image_tokens(model) == 197
    one, two = (step_flops(model, variant_from(CATALOGUE, v)) for v in ("clip", "hycoclip"))
    assert round(one.image_forward / 1e9, 1) == IMAGE_GFLOP[size]
    assert round(one.text_forward / 1e9, 2) == 5.96
    assert (round(one.per_step(768) / 1e12, 1), round(two.per_step(768) / 1e12, 1)) == STEP_TFLOP[size]
    for clip_like, box_like in (("meru", "argent"), ("meru_adaent", "argent_noreg")):
        assert step_flops(model, variant_from(CATALOGUE, clip_like)) == one
        assert step_flops(model, variant_from(CATALOGUE, box_like)) == two


def test_items_per_sample_follow_the_variant_fields():
    assert items_per_sample(variant_from(CATALOGUE, "clip")) == (1, 1)
    assert items_per_sample(variant_from(CATALOGUE, "argent")) == (2, 2)
    # a hard-negative variant encodes its mined negative caption too
    assert items_per_sample(variant_from(CATALOGUE, "argent_negs_cement")) == (2, 3)


def test_layer_count_and_seconds():
    # 2·t·12·d² + 4·t²·d at the MLP ratio 4; the ratio enters the dense part only
    assert layer_forward_flops(10, 8) == 2 * 10 * 12 * 64 + 4 * 100 * 8
    assert layer_forward_flops(10, 8, 2.0) == 2 * 10 * 8 * 64 + 4 * 100 * 8
    # 34.7 TFLOP at 35 % of 312 TFLOP/s: the doc's 0.32 s per step on one A100, 8 GPUs share it
    assert step_seconds(34.65e12, 0.35, 312) == pytest.approx(0.3173, abs=1e-4)
    assert step_seconds(34.65e12, 0.35, 312, gpus=8) == pytest.approx(0.3173 / 8, abs=1e-4)
