"""The two towers of MERU's codebase (facebookresearch/meru, forked by HyCoCLIP), written for argent.

Module and parameter names are chosen so that the state-dict keys are the released ones
(``meru_layout.meru_layout`` lists them); the computation is the one the release runs at inference:

- image: timm's ``VisionTransformer`` as MERU builds it (``build_timm_vit``: [CLS] pooling, no
  head, ``nn.LayerNorm`` with eps 1e-5 everywhere, fused qkv with bias, exact GELU MLP of ratio 4,
  the stored position embedding added to [CLS] + patches, final norm, the [CLS] row out);
- text: MERU's ``TransformerTextEncoder``: token + position embeddings, pre-LN causal blocks
  (``nn.MultiheadAttention``, MLP ``c_fc`` / GELU / ``c_proj``), ``ln_final``; the feature is read at
  the end-of-text token (the largest id), as ``CLIPBaseline.encode_text`` does.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class MeruArch:
    """One configuration of the released models (configs/train_{meru,clip}_vit_{s,b,l}.py)."""

    vision_width: int
    vision_layers: int
    vision_heads: int
    timm_name: str = ""  # the timm architecture MERU's config names (documentation only)
    image_size: int = 224
    patch_size: int = 16
    text_width: int = 512
    text_layers: int = 12
    text_heads: int = 8  # MERU's arch string "L12_W512" has no A: heads = W // 64
    vocab_size: int = 49408
    context_length: int = 77
    embed_dim: int = 512

    @property
    def tokens(self) -> int:
        """Image tokens: the patch grid plus [CLS]."""
        return (self.image_size // self.patch_size) ** 2 + 1


class PatchEmbed(nn.Module):
    def __init__(self, width: int, patch_size: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: Tensor) -> Tensor:
        return self.proj(images).flatten(2).transpose(1, 2)  # (B, grid², W)


class VitAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(batch, length, width))


class VitMlp(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class VitBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = VitAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = VitMlp(width)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VitTower(nn.Module):
    """Normalised pixels (B, 3, S, S) -> [CLS] features (B, vision_width)."""

    def __init__(self, arch: MeruArch) -> None:
        super().__init__()
        width = arch.vision_width
        if width % arch.vision_heads:
            raise ValueError(f"vision width {width} is not divisible by {arch.vision_heads} heads")
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        # Fixed 2-D sin-cos in MERU, but stored in the checkpoint: the stored values are used.
        self.pos_embed = nn.Parameter(torch.zeros(1, arch.tokens, width), requires_grad=False)
        self.patch_embed = PatchEmbed(width, arch.patch_size)
        self.blocks = nn.ModuleList(VitBlock(width, arch.vision_heads) for _ in range(arch.vision_layers))
        self.norm = nn.LayerNorm(width)
        self.width = width

    def forward(self, pixels: Tensor) -> Tensor:
        x = self.patch_embed(pixels)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.norm(x)[:, 0]


class TextBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(OrderedDict([("c_fc", nn.Linear(width, 4 * width)), ("gelu", nn.GELU()),
                                              ("c_proj", nn.Linear(4 * width, width))]))
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
        return x + self.mlp(self.ln_2(x))


class TextTower(nn.Module):
    """Token ids (B, L), right-padded with 0 -> features at the end-of-text token (B, text_width)."""

    def __init__(self, arch: MeruArch) -> None:
        super().__init__()
        width = arch.text_width
        if width % arch.text_heads:
            raise ValueError(f"text width {width} is not divisible by {arch.text_heads} heads")
        self.posit_embed = nn.Parameter(torch.zeros(arch.context_length, width))
        # Persistent in MERU, so the release stores it (True = masked: a position never sees later ones).
        length = arch.context_length
        self.register_buffer("attn_mask", torch.ones(length, length, dtype=torch.bool).triu(diagonal=1))
        self.token_embed = nn.Embedding(arch.vocab_size, width)
        self.resblocks = nn.ModuleList(TextBlock(width, arch.text_heads) for _ in range(arch.text_layers))
        self.ln_final = nn.LayerNorm(width)
        self.width = width

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.shape[1] > self.posit_embed.shape[0]:
            raise ValueError(f"text has {tokens.shape[1]} tokens; the model's context length is "
                             f"{self.posit_embed.shape[0]}")
        eot = tokens.argmax(dim=-1)
        # Causal attention: the padding after the batch's last end-of-text token never reaches a feature
        # we read, so dropping it is exact (MERU itself pads only to the batch's longest caption).
        if tokens.numel():
            tokens = tokens[:, : int(eot.max()) + 1]
        length = tokens.shape[1]
        x = self.token_embed(tokens) + self.posit_embed[:length]
        mask = self.attn_mask[:length, :length]
        for block in self.resblocks:
            x = block(x, mask)
        x = self.ln_final(x)
        return x[torch.arange(x.shape[0], device=x.device), eot]
