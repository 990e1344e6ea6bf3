"""Dual encoder: shapes, the lift, the scalars' clamps, weight-decay groups, the schedule."""

import math

import pytest
import torch

from argent import geometry
from argent.config import OptimConfig, model_from
from argent.engine.optim import build_optimizer, build_scheduler, lr_factor, param_groups
from argent.models import build_model, tokenize


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return {g: build_model(model_from("tiny"), g) for g in ("lorentz", "euclidean")}


def test_lorentz_embeddings_lie_on_the_hyperboloid(tiny):
    model = tiny["lorentz"]
    x = model.encode_image(torch.rand(3, 3, 64, 64)).double()
    c = model.curv().double()
    t = torch.sqrt(1 / c + (x * x).sum(-1))
    inner = (x * x).sum(-1) - t * t  # <x, x>_L with the recomputed time component
    assert torch.allclose(inner, -1 / c.expand_as(inner), atol=1e-9)
    # project=False is W f before α: lifting it by hand gives the same point.
    v = model.encode_image(torch.rand(2, 3, 64, 64), project=False)
    a_img, _ = model.alphas()
    assert v.shape == (2, 128)
    manual = geometry.exp_map0(v * a_img, model.curv())
    assert torch.allclose(model.lift_image(v), manual)


def test_alpha_init_gives_unit_tangent_scale(tiny):
    a_img, a_txt = tiny["lorentz"].alphas()
    assert a_img.item() == pytest.approx(128**-0.5)
    assert a_txt.item() == pytest.approx(128**-0.5)


def test_euclidean_embeddings_are_unit_norm_and_similarity_is_cosine(tiny):
    model = tiny["euclidean"]
    x = model.encode_image(torch.rand(2, 3, 64, 64))
    y = model.encode_text(tokenize(["a red square", "a star"], 32))
    assert torch.allclose(x.norm(dim=-1), torch.ones(2), atol=1e-6)
    assert torch.allclose(model.similarity(x, y), torch.nn.functional.cosine_similarity(x[:, None], y[None], dim=-1), atol=1e-6)


def test_lorentz_similarity_is_negative_distance(tiny):
    model = tiny["lorentz"]
    x, y = model.encode_image(torch.rand(2, 3, 64, 64)), model.encode_text(tokenize(["a", "b c"], 32))
    assert torch.allclose(model.similarity(x, y), -geometry.pairwise_dist(x, y, model.curv()))


def test_text_feature_is_taken_at_end_of_text(tiny):
    model = tiny["lorentz"].eval()
    tokens = tokenize(["a red square"], 32)
    padded = tokens.clone()
    eot = tokens.argmax(-1).item()
    padded[0, eot + 1:] = 7  # junk after EOT must not change the causal feature
    with torch.no_grad():
        assert torch.allclose(model.encode_text(tokens), model.encode_text(padded), atol=1e-5)


def test_scalar_clamps():
    model = build_model(model_from("tiny"), "lorentz")
    with torch.no_grad():
        model.log_curv.fill_(10.0)
        model.log_logit_scale.fill_(10.0)
        model.visual_alpha.fill_(3.0)
    assert model.curv().item() == pytest.approx(10.0, rel=1e-5)
    assert model.logit_scale().item() == pytest.approx(100.0, rel=1e-5)
    assert model.alphas()[0].item() == pytest.approx(1.0)


def _push_past_bounds(model):
    with torch.no_grad():
        model.log_curv.fill_(10.0)  # bound: log(10 · c_init) ≈ 2.30
        model.log_logit_scale.fill_(10.0)  # bound: log 100 ≈ 4.61
        model.visual_alpha.fill_(3.0)  # bound: 0
        model.textual_alpha.fill_(3.0)


def _inward_steps(model, steps, clamp):
    """Minimise c + s + α_img + α_txt (read through the getters), which pulls every scalar inward."""
    opt = torch.optim.SGD([model.log_curv, model.log_logit_scale, model.visual_alpha, model.textual_alpha], lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        a_img, a_txt = model.alphas()
        (model.curv() + model.logit_scale() / 100 + a_img + a_txt).backward()
        opt.step()
        if clamp:
            model.clamp_scalars_()


def test_stored_scalars_come_back_from_past_their_bounds():
    torch.manual_seed(0)
    model = build_model(model_from("tiny"), "lorentz")
    bounds = {"log_curv": math.log(10.0), "log_logit_scale": math.log(100.0), "visual_alpha": 0.0, "textual_alpha": 0.0}
    # Clamped in place after each step (as the trainer does), each one returns inside its bound.
    _push_past_bounds(model)
    _inward_steps(model, 5, clamp=True)
    for name, bound in bounds.items():
        assert getattr(model, name).item() < bound, name


def test_weight_decay_groups_follow_the_recipe():
    model = build_model(model_from("tiny"), "lorentz")
    groups = {g["name"]: g for g in param_groups(model, OptimConfig(norm_bias_decay=0.0))}
    names = {id(p): n for n, p in model.named_parameters()}
    scalar_names = {names[id(p)] for p in groups["scalars"]["params"]}
    assert scalar_names == {"log_logit_scale", "visual_alpha", "textual_alpha", "log_curv"}
    assert groups["scalars"]["weight_decay"] == 0.0
    assert groups["norm_bias"]["weight_decay"] == 0.0
    assert all(p.ndim == 1 for p in groups["norm_bias"]["params"])
    assert groups["weights"]["weight_decay"] == 0.2
    n_total = sum(1 for p in model.parameters() if p.requires_grad)
    assert sum(len(g["params"]) for g in groups.values()) == n_total
    assert isinstance(build_optimizer(model, OptimConfig()), torch.optim.AdamW)


def test_schedule_warms_up_then_half_cosine_to_zero():
    assert lr_factor(0, 10, 100) == pytest.approx(0.1)
    assert lr_factor(9, 10, 100) == pytest.approx(1.0)
    mid = 10 + 45
    assert lr_factor(mid, 10, 100) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert lr_factor(100, 10, 100) == pytest.approx(0.0, abs=1e-12)


def test_wsd_schedule_holds_the_peak_then_decays_linearly_to_zero():
    # 600 steps, 60 warm-up, the last 20 % (120 steps) a linear decay: the default's recipe
    assert lr_factor(59, 60, 600, 0.2) == pytest.approx(1.0)
    assert all(lr_factor(s, 60, 600, 0.2) == 1.0 for s in range(60, 481))
    assert lr_factor(540, 60, 600, 0.2) == pytest.approx(0.5)
    assert lr_factor(600, 60, 600, 0.2) == 0.0
    factors = [lr_factor(s, 60, 600, 0.2) for s in range(480, 601)]
    assert factors == sorted(factors, reverse=True)
    # a decay longer than what follows the warm-up starts right after it
    assert lr_factor(10, 10, 20, 0.9) == pytest.approx(1.0) and lr_factor(15, 10, 20, 0.9) == pytest.approx(0.5)


def test_the_scheduler_follows_optim_schedule():
    model = torch.nn.Linear(2, 2)
    for schedule, expected in (("cosine", lr_factor(300, 60, 600)), ("wsd", 1.0)):
        cfg = OptimConfig(lr=1.0, warmup_steps=60, schedule=schedule)
        opt = build_optimizer(model, cfg)
        sched = build_scheduler(opt, cfg, 600)
        for _ in range(300):
            opt.step()
            sched.step()
        assert sched.get_last_lr()[0] == pytest.approx(expected)


POOLED = dict(image_size=32, patch_size=8, vision_width=32, vision_layers=1, vision_heads=2, conv_stem=8,
              conv_stem_pooled=True)


def test_pooled_stem_makes_the_patch_grid_and_shifts_with_the_image():
    """The pooled stem is a convnet whose map is the patch grid: a shift of the image by one patch
    shifts the map by one cell (away from the padded border), which a plain patchify also does but
    with no pooling inside a patch. Eval mode: BatchNorm uses its running statistics."""
    from argent.models.encoders import ImageEncoder

    torch.manual_seed(0)
    tower = ImageEncoder(model_from("tiny", POOLED)).eval()
    stem = tower.vit.conv_proj
    image = torch.zeros(1, 3, 32, 32)
    image[:, :, 4:12, 4:12] = torch.rand(1, 3, 8, 8)
    shifted = torch.roll(image, shifts=(8, 8), dims=(2, 3))
    with torch.no_grad():
        a, b = stem(image), stem(shifted)
    assert a.shape == (1, 32, 4, 4)
    torch.testing.assert_close(b[..., 2, 2], a[..., 1, 1])
    assert not torch.allclose(a[..., 1, 1], a[..., 2, 2])


def test_pooled_stem_features_do_not_depend_on_the_batch_in_eval_mode():
    """BatchNorm normalises by batch statistics in training only; evaluation must embed an image the
    same alone or in any batch (the evaluation and the probe call model.eval())."""
    torch.manual_seed(0)
    model = build_model(model_from("tiny", POOLED), "lorentz")
    images = torch.rand(6, 3, 32, 32)
    model.train()
    for _ in range(3):  # move the running statistics off their init
        model.encode_image(images)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model.encode_image(images[:1]), model.encode_image(images)[:1])


@pytest.mark.parametrize("override", [dict(patch_size=6, image_size=36), dict(conv_stem=0)])
def test_pooled_stem_needs_channels_and_a_power_of_two_patch(override):
    from argent.config import ConfigError

    with pytest.raises(ConfigError, match="conv_stem_pooled"):
        model_from("tiny", {**POOLED, **override})
