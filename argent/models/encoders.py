"""Image and text towers.

Image: torchvision's ``VisionTransformer`` with its classification head removed ([CLS] output) and,
as in MERU/HyCoCLIP, fixed 2-D sin-cos position embeddings (class-token position zero).
Text: a CLIP-style pre-LN causal Transformer; the feature is taken at the end-of-text token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchvision.models.vision_transformer import VisionTransformer

from argent.config import ModelConfig

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def sincos_2d(grid: int, width: int) -> Tensor:
    """Fixed 2-D sin-cos position embeddings (MoCo-v3 style): (grid*grid, width)."""
    if width % 4:
        raise ValueError(f"vision_width must be divisible by 4 for 2-D sin-cos embeddings, got {width}")
    coords = torch.arange(grid, dtype=torch.float64)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    quarter = width // 4
    omega = 1.0 / (10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter))
    out_x = xx.flatten()[:, None] * omega[None, :]
    out_y = yy.flatten()[:, None] * omega[None, :]
    emb = torch.cat([out_x.sin(), out_x.cos(), out_y.sin(), out_y.cos()], dim=1)
    return emb.float()


class SelfAttention(nn.MultiheadAttention):
    """``nn.MultiheadAttention`` (same parameters, same state-dict keys) whose self-attention path is
    one batch-first packed projection, a view into heads and ``F.scaled_dot_product_attention``.

    The stock training path transposes to sequence-first, splits the packed projection with copies
    and pays for them again in backward; on a CPU that was a quarter of the step (docs/throughput.md).
    Anything this path does not cover (cross-attention, padding masks, attention weights) goes
    to the stock implementation.
    """

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        if not (query is key is value and self.batch_first and self._qkv_same_embed_dim and query.dim() == 3
                and key_padding_mask is None and not need_weights and (attn_mask is None or is_causal)):
            return super().forward(query, key, value, key_padding_mask=key_padding_mask, need_weights=need_weights,
                                   attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal)
        batch, length, width = query.shape
        heads = self.num_heads
        qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)
        q, k, v = qkv.view(batch, length, 3, heads, width // heads).permute(2, 0, 3, 1, 4).unbind(0)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                             is_causal=is_causal)
        out = out.transpose(1, 2).reshape(batch, length, width)
        return self.out_proj(out), None


def _with_sdpa(attn: nn.MultiheadAttention) -> SelfAttention:
    """The same attention (parameters copied) as a ``SelfAttention``; the global RNG is left untouched so
    the model's initialisation does not depend on this swap."""
    with torch.random.fork_rng(devices=[]):
        fast = SelfAttention(attn.embed_dim, attn.num_heads, dropout=attn.dropout, bias=attn.in_proj_bias is not None,
                             batch_first=attn.batch_first)
    fast.load_state_dict(attn.state_dict())
    return fast


class ImageEncoder(nn.Module):
    """Pixels in [0, 1], (B, 3, S, S) -> [CLS] features (B, vision_width)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.image_size % cfg.patch_size:
            raise ValueError(f"model.image_size {cfg.image_size} is not a multiple of patch_size {cfg.patch_size}")
        self.vit = VisionTransformer(
            image_size=cfg.image_size,
            patch_size=cfg.patch_size,
            num_layers=cfg.vision_layers,
            num_heads=cfg.vision_heads,
            hidden_dim=cfg.vision_width,
            mlp_dim=int(cfg.vision_width * cfg.vision_mlp_ratio),
        )
        self.vit.heads = nn.Identity()
        for block in self.vit.encoder.layers:
            block.self_attention = _with_sdpa(block.self_attention)
        if cfg.conv_stem > 0:
            make_stem = pooled_conv_stem if cfg.conv_stem_pooled else conv_stem
            self.vit.conv_proj = make_stem(cfg.conv_stem, cfg.vision_width, cfg.patch_size)
        grid = cfg.image_size // cfg.patch_size
        pos = torch.cat([torch.zeros(1, cfg.vision_width), sincos_2d(grid, cfg.vision_width)])
        # Fixed, not learned (MERU): keep it a buffer-like parameter torchvision's forward reads.
        self.vit.encoder.pos_embedding = nn.Parameter(pos[None], requires_grad=False)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)
        self.width = cfg.vision_width
        self.channels_last = cfg.conv_stem > 0

    def forward(self, images: Tensor) -> Tensor:
        pixels = (images - self.mean) / self.std
        if self.channels_last:
            # oneDNN's convolutions (forward and backward) run the stem about a third faster in
            # channels-last layout on a CPU; same parameters, float rounding only (docs/throughput.md).
            pixels = pixels.contiguous(memory_format=torch.channels_last)
        return self.vit(pixels)


def conv_stem(channels: int, width: int, patch_size: int) -> nn.Sequential:
    """A 3×3 convolution (stride 1) and GELU before the patch projection: local edges and corners
    first, then the usual patch grid; output (B, width, S/p, S/p) as the ViT's ``conv_proj``."""
    return nn.Sequential(
        nn.Conv2d(3, channels, kernel_size=3, padding=1),
        nn.GELU(),
        nn.Conv2d(channels, width, kernel_size=patch_size, stride=patch_size),
    )


def pooled_conv_stem(channels: int, width: int, patch_size: int) -> nn.Sequential:
    """A small convnet as the patch projection (a hybrid ViT): per halving of ``patch_size`` one stage of
    3×3 convolution, BatchNorm, GELU and 2×2 max-pool (channels doubling from ``channels``), then a 1×1
    projection to ``width``; output (B, width, S/p, S/p) as the ViT's ``conv_proj``.

    Pooling and normalisation give the tower the translation invariance that a plain ViT must learn per
    position; measured, the tiny tower learns shape from whole scenes only with both (docs/hiershapes.md).
    """
    stages, c_in, c_out = [], 3, channels
    for _ in range(patch_size.bit_length() - 1):  # log2(patch_size) stages; the config checks a power of two
        stages += [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.GELU(),
                   nn.MaxPool2d(2)]
        c_in, c_out = c_out, 2 * c_out
    return nn.Sequential(*stages, nn.Conv2d(c_in, width, kernel_size=1))


class TextEncoder(nn.Module):
    """Token ids (B, L) -> features at the end-of-text token (B, text_width)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        width, layers = cfg.text_width, cfg.text_layers
        self.token_embedding = nn.Embedding(cfg.vocab_size, width)
        self.position_embedding = nn.Parameter(torch.empty(cfg.context_length, width))
        layer = nn.TransformerEncoderLayer(
            d_model=width,
            nhead=cfg.text_heads,
            dim_feedforward=4 * width,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.transformer = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        self.register_buffer("causal_mask", nn.Transformer.generate_square_subsequent_mask(cfg.context_length), persistent=False)
        self.width = width
        self._init_weights(width, layers)
        for block in self.transformer.layers:
            block.self_attn = _with_sdpa(block.self_attn)

    def _init_weights(self, width: int, layers: int) -> None:
        # CLIP/MERU init: small embeddings; residual projections shrunk by depth.
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding, std=0.01)
        for block in self.transformer.layers:
            nn.init.normal_(block.self_attn.in_proj_weight, std=width**-0.5)
            nn.init.normal_(block.self_attn.out_proj.weight, std=(2 * width * layers) ** -0.5)
            nn.init.normal_(block.linear1.weight, std=(2 * width) ** -0.5)
            nn.init.normal_(block.linear2.weight, std=(2 * width * layers) ** -0.5)

    def forward(self, tokens: Tensor) -> Tensor:
        length = tokens.shape[1]
        if length > self.position_embedding.shape[0]:
            raise ValueError(f"text has {length} tokens; model.context_length is {self.position_embedding.shape[0]}")
        # Causal attention: a position never sees the ones after it, so the padding after the batch's
        # last end-of-text token cannot change any feature we read. Dropping it (rounded up to a
        # multiple of 8 to keep the number of distinct shapes small) is exact and saves most of the tower.
        # Not under torch.compile, where a data-dependent length would break the graph.
        eot = tokens.argmax(dim=-1)
        if tokens.numel() and not torch.compiler.is_compiling():
            length = min(length, -(-(int(eot.max()) + 1) // 8) * 8)
            tokens = tokens[:, :length]
        x = self.token_embedding(tokens) + self.position_embedding[:length]
        x = self.transformer(x, mask=self.causal_mask[:length, :length], is_causal=True)
        x = self.ln_final(x)
        # The end-of-text token has the largest id in the CLIP vocabulary.
        return x[torch.arange(x.shape[0], device=x.device), eot]


def init_projection(proj: nn.Linear, width: int) -> None:
    nn.init.normal_(proj.weight, std=width**-0.5)


def num_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


