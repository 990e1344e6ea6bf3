"""The faster step computes the same thing: SDPA attention, trimmed text padding, one batched forward
per tower, fused AdamW, and torch.compile (to float tolerance)."""

import logging

import pytest
import torch
from torch import nn

from argent.config import ModelConfig, OptimConfig, model_from
from argent.engine.optim import build_optimizer, param_groups
from argent.engine.step import BatchEncoder, compile_step, encode_batch
from argent.models import build_model, tokenize
from argent.models.encoders import SelfAttention, _with_sdpa
from tests.fixtures import ROOT, fixed_batch

SMALL = ModelConfig(image_size=16, patch_size=8, vision_width=32, vision_layers=2, vision_heads=2, text_width=32,
                    text_layers=2, text_heads=2, context_length=16, embed_dim=16)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_attention_matches_stock_multihead_attention_forward_and_backward(causal):
    torch.manual_seed(0)
    stock = nn.MultiheadAttention(32, 4, batch_first=True)
    fast = _with_sdpa(stock)
    assert isinstance(fast, SelfAttention) and fast.state_dict().keys() == stock.state_dict().keys()
    x = torch.randn(3, 7, 32, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(7) if causal else None
    ref, _ = stock(x, x, x, need_weights=False, attn_mask=mask, is_causal=causal)
    out, weights = fast(x, x, x, need_weights=False, attn_mask=mask, is_causal=causal)
    assert weights is None
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)
    g_ref = torch.autograd.grad(ref.square().sum(), [x, stock.in_proj_weight])
    g_out = torch.autograd.grad(out.square().sum(), [x, fast.in_proj_weight])
    for a, b in zip(g_out, g_ref):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_sdpa_swap_leaves_the_initialisation_unchanged():
    """Building the model consumes the global RNG exactly as before the swap: same init, same seed."""
    torch.manual_seed(0)
    a = build_model(SMALL, "lorentz")
    torch.manual_seed(0)
    stock_state = build_model(SMALL, "lorentz").state_dict()
    after = torch.rand(3)
    torch.manual_seed(0)
    build_model(SMALL, "lorentz")
    assert torch.equal(torch.rand(3), after)
    for k, v in a.state_dict().items():
        assert torch.equal(v, stock_state[k]), k


def test_text_features_do_not_depend_on_padding_after_the_last_end_of_text():
    torch.manual_seed(0)
    model = build_model(SMALL, "euclidean").eval()
    short = tokenize(["a red square", "a star"], 16)
    longer = tokenize(["a red square", "a star", "a small blue circle left of a striped star"], 16)
    with torch.no_grad():
        f_short = model.textual(short)
        f_long = model.textual(longer)[:2]
    torch.testing.assert_close(f_short, f_long, atol=1e-6, rtol=1e-6)


def test_trimmed_text_tower_equals_the_full_length_tower():
    """Trimmed padding vs the whole context (the path taken under torch.compile) give the same features."""
    torch.manual_seed(0)
    model = build_model(SMALL, "euclidean").eval()
    tokens = tokenize(["a red square", "a small blue circle"], 16)
    text = model.textual
    with torch.no_grad():
        trimmed = text(tokens)
        x = text.token_embedding(tokens) + text.position_embedding
        x = text.ln_final(text.transformer(x, mask=text.causal_mask, is_causal=True))
        full = x[torch.arange(2), tokens.argmax(-1)]
    torch.testing.assert_close(trimmed, full, atol=1e-6, rtol=1e-6)


def test_one_batched_forward_equals_separate_forwards():
    torch.manual_seed(0)
    model = build_model(model_from("tiny"), "lorentz").eval()
    batch = fixed_batch(6)
    with torch.no_grad():
        together = encode_batch(model, batch, use_boxes=True)
        separate = {"image": model.encode_image(batch["image"]), "crop": model.encode_image(batch["crop"]),
                    "text": model.encode_text(batch["text"]), "phrase": model.encode_text(batch["phrase"])}
    assert together.keys() == separate.keys()
    for k in separate:
        torch.testing.assert_close(together[k], separate[k], atol=1e-6, rtol=1e-6)


def test_fused_adamw_matches_the_reference_for_loop():
    torch.manual_seed(0)
    model = build_model(SMALL, "lorentz")
    twin = build_model(SMALL, "lorentz")
    twin.load_state_dict(model.state_dict())
    cfg = OptimConfig(lr=1e-3)
    fused = build_optimizer(model, cfg)
    assert fused.defaults["fused"]
    loop = torch.optim.AdamW(param_groups(twin, cfg), lr=cfg.lr, betas=cfg.betas, foreach=False)
    # The same gradients for both (model gradients include exactly-zero ones, e.g. the key bias,
    # whose float noise Adam would amplify in either implementation).
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        grads = [torch.randn(p.shape, generator=g) for p in model.parameters()]
        for m, opt in ((model, fused), (twin, loop)):
            for p, grad in zip(m.parameters(), grads):
                p.grad = grad.clone() if p.requires_grad else None
            opt.step()
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=name)


def test_compile_falls_back_to_eager_and_says_why(caplog, monkeypatch):
    def broken_compiled(x):
        raise RuntimeError("inductor: no C++ compiler")  # what a failed first compilation looks like

    monkeypatch.setattr(torch, "compile", lambda fn: broken_compiled)
    wrapped = compile_step(lambda x: x + 1, "a test function")
    with caplog.at_level(logging.WARNING, logger="argent.train"):
        assert wrapped(1) == 2
        assert wrapped(2) == 3
    assert caplog.text.count("running eagerly") == 1
    assert "no C++ compiler" in caplog.text and "a test function" in caplog.text

    def unavailable(fn):
        raise RuntimeError("dynamo unsupported here")

    monkeypatch.setattr(torch, "compile", unavailable)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="argent.train"):
        assert compile_step(lambda x: x * 3)(2) == 6
    assert "dynamo unsupported here" in caplog.text


def test_compiled_and_eager_steps_give_the_same_loss():
    """Forward and backward on a fixed batch, towers compiled with inductor vs eager: the loss to 1e-5 and
    every gradient to float tolerance (inductor fuses and reorders sums; the optimiser step after it
    is the same code for both)."""
    from torch._inductor import config as _unused  # noqa: F401  (inductor importable, else the import fails here)

    from argent.config import load_variants, variant_from
    from argent.losses import Objective

    torch.manual_seed(0)
    model = build_model(SMALL, "lorentz")
    twin = build_model(SMALL, "lorentz")
    twin.load_state_dict(model.state_dict())
    batch = fixed_batch(4, 0, context_length=16)
    batch = {k: v[..., :16, :16] if k in ("image", "crop") else v for k, v in batch.items()}
    variant = variant_from(load_variants(ROOT / "config" / "variants.yaml"), "argent")
    objective = Objective(variant)
    losses = []
    for m, compiled in ((model, False), (twin, True)):
        enc = BatchEncoder(m, True)
        run = compile_step(enc, "test towers") if compiled else enc
        emb, curv, scale = run(batch)
        loss = objective(emb, curv=curv, logit_scale=scale, geometry="lorentz", with_diagnostics=False).total
        loss.backward()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) <= 1e-5, losses
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        if a.requires_grad:
            torch.testing.assert_close(a.grad, b.grad, atol=1e-4, rtol=1e-3, msg=lambda m, name=name: f"{name}: {m}")
