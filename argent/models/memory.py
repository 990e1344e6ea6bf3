"""A lower bound on the memory one training run needs, so that ``argent check`` refuses a model that
cannot fit the machine before any job runs (``model.tiny.embed_dim: 2^31`` passed the check, then
failed as an out-of-memory RuntimeError inside the train job), and ``argent train`` by hand refuses it
too (argent/engine/cli.py). A fact of the model, below both readers; pure and torch-free, like the FLOP
model beside it (argent/models/flops.py), whose token counts and items per sample it shares.

What is counted, in fp32 (4 bytes), each part named by the config keys that size it:

- every parameter four times: the weight, its gradient and AdamW's two moments. The towers'
  transformer layers (``layers · (4 + 2·mlp_ratio) · width²``), the patch projection and position
  embedding of the image tower, the token and position embeddings of the text tower, and the two
  projections to the embedding (``(vision_width + text_width) · embed_dim``);
- the activations the backward pass keeps, per transformer layer and item: the layer's input, the
  packed q, k, v, the attention output and the MLP's hidden layer, ``tokens · width · (5 + mlp_ratio)``,
  times the items of a batch (``items_per_sample`` · ``train.batch_size``).

Left out, so the bound stays below what the trainer allocates: the attention matrices (a fused
kernel need not keep them), layer norms, the convolutional stem, the losses, the data loader and
the Python process itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from argent.config import ExperimentConfig, ModelConfig, VariantConfig
from argent.models.flops import image_tokens, items_per_sample

FLOAT = 4  # bytes of an fp32 value
STATE_COPIES = 4  # weight, gradient, AdamW's exp_avg and exp_avg_sq
GIB = 2**30


@dataclass(frozen=True)
class Part:
    what: str        # "the text activations"
    keys: str        # the config keys that size it, with their values
    bytes: float


def _layer_weights(width: int, layers: int, mlp_ratio: float) -> float:
    return layers * (4 + 2 * mlp_ratio) * width**2  # q, k, v, out and the MLP's two matrices


def _layer_activations(tokens: int, width: int, layers: int, mlp_ratio: float) -> float:
    return layers * tokens * width * (5 + mlp_ratio)  # input, q, k, v, attention output, MLP hidden


def training_memory(model: ModelConfig, variant: VariantConfig, batch: int, size: str) -> list[Part]:
    """The parts of the lower bound (module doc) for one run of ``model`` (the ``model.<size>`` preset
    and its overrides) trained as ``variant`` at ``batch`` samples per step, largest first."""
    images, texts = items_per_sample(variant)
    m, key = model, f"model.{size}"
    vision_tokens = image_tokens(m)
    state = FLOAT * STATE_COPIES
    parts = [
        Part("the image tower's weights", f"{key}.vision_width {m.vision_width}, vision_layers {m.vision_layers}",
             state * (_layer_weights(m.vision_width, m.vision_layers, m.vision_mlp_ratio)
                      + (3 * m.patch_size**2 + vision_tokens) * m.vision_width)),
        Part("the text tower's weights", f"{key}.text_width {m.text_width}, text_layers {m.text_layers}, "
             f"vocab_size {m.vocab_size}, context_length {m.context_length}",
             state * (_layer_weights(m.text_width, m.text_layers, 4.0) + (m.vocab_size + m.context_length) * m.text_width)),
        Part("the projections to the embedding", f"{key}.embed_dim {m.embed_dim}",
             state * (m.vision_width + m.text_width) * m.embed_dim),
        Part("the image activations", f"{key}.image_size {m.image_size}, patch_size {m.patch_size} "
             f"({vision_tokens} tokens), train.batch_size {batch}",
             FLOAT * batch * images * _layer_activations(vision_tokens, m.vision_width, m.vision_layers,
                                                         m.vision_mlp_ratio)),
        Part("the text activations", f"{key}.context_length {m.context_length}, train.batch_size {batch}",
             FLOAT * batch * texts * _layer_activations(m.context_length, m.text_width, m.text_layers, 4.0)),
    ]
    return sorted(parts, key=lambda p: -p.bytes)


def shortfall(parts: list[Part], available: float, run: str) -> str | None:
    """One line when the lower bound exceeds ``available`` bytes: by how much, and what takes most."""
    need = sum(p.bytes for p in parts)
    if need <= available:
        return None
    top = parts[0]
    return (f"run {run}: training needs at least {need / GIB:,.1f} GiB, this machine has {available / GIB:,.1f} GiB "
            f"({(need - available) / GIB:,.1f} GiB short); most of it is {top.what} ({top.bytes / GIB:,.1f} GiB: "
            f"{top.keys}): lower it, or train where the memory is")


def physical_memory() -> float:
    """This machine's physical memory in bytes (what a CPU training job can use at most)."""
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def cpu_shortfall(exp: ExperimentConfig, run: str) -> str | None:
    """The refusal of a CPU run whose lower bound exceeds this machine's memory (``argent check`` and ``argent
    train`` by hand make the same one); None when it fits. GPU runs are left to the job: their memory is the
    device's, split over its DDP ranks."""
    if exp.train.device != "cpu":
        return None
    return shortfall(training_memory(exp.model, exp.variant, exp.train.batch_size, exp.size), physical_memory(), run)
