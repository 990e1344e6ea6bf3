"""MERU-layout checkpoints: MERU and its CLIP baseline (facebookresearch/meru), HyCoCLIP (PalAvik/hycoclip).

Both codebases save ``{"model": model.state_dict(), ...}`` (``CheckpointManager``) with the keys
below; HyCoCLIP's ``HyCoCLIP`` class adds no parameter to MERU's. Two families:

- ``meru`` (MERU, HyCoCLIP): hyperbolic. ``curv`` stores log c, ``visual_alpha`` / ``textual_alpha``
  store log α; an embedding is x̃ = exp₀(α · W f) at curvature −c, with c = exp(curv) and
  α = exp(alpha) read unclamped, as the release's ``encode_image`` / ``encode_text`` do;
- ``clip`` (the CLIP baseline trained in the same code): no curv / alpha; x = W f / ‖W f‖.

Shared by every file: ``logit_scale`` (log s), ``pixel_mean`` / ``pixel_std`` (3, 1, 1) (ImageNet's,
applied inside the model to pixels in [0, 1]), ``visual.*`` (timm ViT), ``textual.*``
(``TransformerTextEncoder``, with its persistent causal ``attn_mask`` buffer), ``visual_proj`` /
``textual_proj`` (bias-free). Preprocessing is the release's: zero-shot and everything else Resize(224,
bicubic, PIL) + CenterCrop(224); retrieval Resize((224, 224), bicubic) without crop. The tokenizer is
CLIP's BPE (the same vocabulary and cleaning as open_clip's), context 77, a long caption cut with its
end-of-text token kept last.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn
from torchvision import transforms as T

from argent.models.pretrained.base import (
    Layout,
    PretrainedConfig,
    PretrainedError,
    PretrainedModel,
    Transform,
    check_layout,
    dtypes_of,
    layout_mismatch,
    read_state_dict,
)
from argent.models.pretrained.meru_towers import MeruArch, TextTower, VitTower
from argent.models.tokenizer import tokenize

__all__ = ["FAMILIES", "LAYOUT_OF_FAMILY", "MERU_ARCHS", "MeruAdapter", "load_meru", "meru_layout"]

# configs/train_{meru,clip}_vit_{s,b,l}.py: the timm arch differs, everything else is shared
# (text L12_W512, vocab 49408, context 77, embed_dim 512, patch 16, image 224).
MERU_ARCHS: dict[str, MeruArch] = {
    "vit_s": MeruArch(vision_width=384, vision_layers=12, vision_heads=12, timm_name="vit_small_mocov3_patch16_224"),
    "vit_b": MeruArch(vision_width=768, vision_layers=12, vision_heads=12, timm_name="vit_base_patch16_224"),
    "vit_l": MeruArch(vision_width=1024, vision_layers=24, vision_heads=16, timm_name="vit_large_patch16_224"),
}

FAMILIES = {"meru": "lorentz", "clip": "euclidean"}
LAYOUT_OF_FAMILY = {"meru": "meru", "clip": "meru_clip"}  # the names ``--pretrained <layout>:<path>`` takes

# The published key table, as templates over a configuration's dimensions: V vision width, T text
# width, N image tokens, P patch size, C context length, E embed dim, Y vocabulary.
_HEAD_KEYS: tuple[tuple[str, tuple[int | str, ...]], ...] = (
    ("logit_scale", ()),
    ("pixel_mean", (3, 1, 1)),
    ("pixel_std", (3, 1, 1)),
)
_HYPERBOLIC_KEYS = (("curv", ()), ("visual_alpha", ()), ("textual_alpha", ()))
_VISUAL_KEYS = (
    ("visual.cls_token", (1, 1, "V")),
    ("visual.pos_embed", (1, "N", "V")),
    ("visual.patch_embed.proj.weight", ("V", 3, "P", "P")),
    ("visual.patch_embed.proj.bias", ("V",)),
)
_VISUAL_BLOCK = (  # visual.blocks.{i}.
    ("norm1.weight", ("V",)), ("norm1.bias", ("V",)),
    ("attn.qkv.weight", ("3V", "V")), ("attn.qkv.bias", ("3V",)),
    ("attn.proj.weight", ("V", "V")), ("attn.proj.bias", ("V",)),
    ("norm2.weight", ("V",)), ("norm2.bias", ("V",)),
    ("mlp.fc1.weight", ("4V", "V")), ("mlp.fc1.bias", ("4V",)),
    ("mlp.fc2.weight", ("V", "4V")), ("mlp.fc2.bias", ("V",)),
)
_VISUAL_TAIL = (("visual.norm.weight", ("V",)), ("visual.norm.bias", ("V",)))
_TEXT_KEYS = (
    ("textual.posit_embed", ("C", "T")),
    ("textual.attn_mask", ("C", "C")),
    ("textual.token_embed.weight", ("Y", "T")),
)
_TEXT_BLOCK = (  # textual.resblocks.{i}.
    ("attn.in_proj_weight", ("3T", "T")), ("attn.in_proj_bias", ("3T",)),
    ("attn.out_proj.weight", ("T", "T")), ("attn.out_proj.bias", ("T",)),
    ("ln_1.weight", ("T",)), ("ln_1.bias", ("T",)),
    ("mlp.c_fc.weight", ("4T", "T")), ("mlp.c_fc.bias", ("4T",)),
    ("mlp.c_proj.weight", ("T", "4T")), ("mlp.c_proj.bias", ("T",)),
    ("ln_2.weight", ("T",)), ("ln_2.bias", ("T",)),
)
_TAIL_KEYS = (
    ("textual.ln_final.weight", ("T",)), ("textual.ln_final.bias", ("T",)),
    ("visual_proj.weight", ("E", "V")),
    ("textual_proj.weight", ("E", "T")),
)

# The release names two scalars as our interface names methods (curv(), logit_scale()).
_RENAME = {"curv": "log_curv", "logit_scale": "log_logit_scale"}


def _dims(arch: MeruArch) -> dict[str, int]:
    v, t = arch.vision_width, arch.text_width
    return {"V": v, "3V": 3 * v, "4V": 4 * v, "T": t, "3T": 3 * t, "4T": 4 * t, "N": arch.tokens,
            "P": arch.patch_size, "C": arch.context_length, "E": arch.embed_dim, "Y": arch.vocab_size}


def meru_layout(arch: MeruArch, family: str) -> Layout:
    """Every key of a released checkpoint of this configuration and family, with its shape."""
    if family not in FAMILIES:
        raise PretrainedError(f"MERU-layout family {family!r} unknown; known: {sorted(FAMILIES)}")
    dims = _dims(arch)

    def add(prefix: str, rows: tuple) -> None:
        for key, shape in rows:
            out[prefix + key] = tuple(dims[d] if isinstance(d, str) else d for d in shape)

    out: Layout = {}
    add("", _HEAD_KEYS)
    if family == "meru":
        add("", _HYPERBOLIC_KEYS)
    add("", _VISUAL_KEYS)
    for i in range(arch.vision_layers):
        add(f"visual.blocks.{i}.", _VISUAL_BLOCK)
    add("", _VISUAL_TAIL)
    add("", _TEXT_KEYS)
    for i in range(arch.text_layers):
        add(f"textual.resblocks.{i}.", _TEXT_BLOCK)
    add("", _TAIL_KEYS)
    return out


class MeruAdapter(PretrainedModel):
    """A MERU-layout model with the evaluation's interface."""

    def __init__(self, arch: MeruArch, family: str, layout_name: str = "meru") -> None:
        super().__init__()
        if family not in FAMILIES:
            raise PretrainedError(f"MERU-layout family {family!r} unknown; known: {sorted(FAMILIES)}")
        self.geometry = FAMILIES[family]
        self.layout_name = layout_name
        self.arch = arch
        self.config = PretrainedConfig(arch.embed_dim, arch.context_length, arch.image_size)
        self.log_logit_scale = nn.Parameter(torch.zeros(()))
        if family == "meru":
            self.log_curv = nn.Parameter(torch.zeros(()))
            self.visual_alpha = nn.Parameter(torch.zeros(()))
            self.textual_alpha = nn.Parameter(torch.zeros(()))
        self.register_buffer("pixel_mean", torch.zeros(3, 1, 1))
        self.register_buffer("pixel_std", torch.ones(3, 1, 1))
        self.visual = VitTower(arch)
        self.textual = TextTower(arch)
        self.visual_proj = nn.Linear(arch.vision_width, arch.embed_dim, bias=False)
        self.textual_proj = nn.Linear(arch.text_width, arch.embed_dim, bias=False)

    def image_features(self, images: Tensor) -> Tensor:
        return self.visual_proj(self.visual((images - self.pixel_mean) / self.pixel_std))

    def text_features(self, tokens: Tensor) -> Tensor:
        return self.textual_proj(self.textual(tokens))

    def image_transform(self, kind: str = "eval") -> Transform:
        """The release's evaluation transforms (torchvision on PIL images): ``eval`` resizes the
        shorter side and centre-crops (zero-shot classification); ``squeeze`` resizes to S×S (retrieval)."""
        size = self.arch.image_size
        if kind == "squeeze":
            return T.Compose([T.Resize((size, size), T.InterpolationMode.BICUBIC), T.ToTensor()])
        return T.Compose([T.Resize(size, T.InterpolationMode.BICUBIC), T.CenterCrop(size), T.ToTensor()])

    def tokenize(self, texts: list[str]) -> Tensor:
        return tokenize(list(texts), self.arch.context_length)


def _fitting(state: dict[str, Tensor]) -> list[str]:
    """The declared layouts (family:arch) this state dict would fit, for the refusal message."""
    return [f"{LAYOUT_OF_FAMILY[family]}:{name}" for family in FAMILIES for name, arch in MERU_ARCHS.items()
            if layout_mismatch(state, meru_layout(arch, family)) is None]


def adapter_from_state_dict(state: dict[str, Tensor], arch: MeruArch, family: str, where: str,
                            layout_name: str = "") -> MeruAdapter:
    """Check ``state`` against the published layout, then load it: all of it, or nothing."""
    layout_name = layout_name or f"MERU {family}"
    expected = meru_layout(arch, family)
    if layout_mismatch(state, expected) is not None:
        fits = _fitting(state)
        check_layout(state, expected, layout_name, where, f"It fits {', '.join(fits)}." if fits else "")
    with torch.device("meta"):  # no random init of weights about to be replaced (ViT-L: 367M parameters)
        model = MeruAdapter(arch, family, layout_name)
    # dtypes too: the causal mask is bool (True = masked); stored as 0/1 floats it would be added to
    # the attention scores instead. Keys in the release's names, our two renamed scalars are floats.
    own = dtypes_of(model)
    check_layout(state, expected, layout_name, where,
                 dtypes={k: own[_RENAME.get(k, k)] for k in expected if _RENAME.get(k, k) in own})
    # float32 like the release's own inference (a half-precision file is widened); the mask stays bool.
    renamed = {_RENAME.get(k, k): v if v.dtype == torch.bool else v.float() for k, v in state.items()}
    model.load_state_dict(renamed, strict=True, assign=True)
    return model.eval()


def load_meru(path: str | Path, arch_name: str, family: str = "meru") -> MeruAdapter:
    """A released MERU-layout checkpoint (MERU, HyCoCLIP: ``meru``; their CLIP baselines: ``clip``)."""
    if family not in FAMILIES:
        raise PretrainedError(f"MERU-layout family {family!r} unknown; known: {sorted(FAMILIES)}")
    if arch_name not in MERU_ARCHS:
        raise PretrainedError(f"MERU-layout arch {arch_name!r} unknown; known: {sorted(MERU_ARCHS)} "
                              f"(ViT-S/B/L of configs/train_*_vit_{{s,b,l}}.py)")
    state = read_state_dict(path)
    return adapter_from_state_dict(state, MERU_ARCHS[arch_name], family, str(path),
                                   f"{LAYOUT_OF_FAMILY[family]}:{arch_name}")
