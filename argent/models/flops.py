"""The FLOP model of a training step (docs/scaling.md §4, "Step cost"): one home for the count that
the plan's estimate (``argent plan``, argent/plan/cost.py) and the GPU check's MFU
(bench/gpu_check.py) both use, and the memory bound beside it (argent/models/memory.py) shares its token
counts. A fact of the model and the variant, below the plan and the engine that read it; pure and torch-free
(the plan imports it at DAG build).

What is counted, per transformer layer and one sequence of ``tokens`` tokens of width ``d``, forward:
``2·tokens·(4 + 2·mlp_ratio)·d²`` (QKV 3d², output projection d², MLP 2·mlp_ratio·d²; at the
ratio 4 of every tower here this is the doc's 2·tokens·12·d²) plus ``4·tokens²·d`` (the two
attention matmuls, counted on the full square as model-FLOPs utilisation does, causal or not).
Image tower: ``(image_size / patch_size)² + 1`` tokens (197 at 224 px, patch 16); text tower:
``context_length`` tokens (77), every position, as the compiled step runs it. A training step is
3 × forward (backward ≈ 2 × forward). Left out, each small beside the towers at S/B/L: the patch
projection, embeddings, a convolutional stem (not small for the CPU ``tiny`` models: a third of
their step, docs/scaling.md §1), the projections to the embedding, the losses and the optimiser.

Items encoded per sample: one image and one caption; a variant with ``use_boxes`` (HyCoCLIP,
ARGENT) also one box crop and its phrase; a hard-negative variant (``hard_negatives`` not "none")
one more text, its mined negative caption.
"""

from __future__ import annotations

from dataclasses import dataclass

from argent.config import ModelConfig, VariantConfig

TRAIN_FACTOR = 3.0
"""Training FLOPs over forward FLOPs: forward 1, backward 2 (gradients of activations and weights)."""


def layer_forward_flops(tokens: int, width: int, mlp_ratio: float = 4.0) -> float:
    """Forward FLOPs of one transformer layer over one sequence: ``2·t·(4 + 2·r)·d² + 4·t²·d``.

    tokens: sequence length t; width: model width d; mlp_ratio: hidden width of the MLP over d (r).
    Returns FLOPs (multiply and add counted as 2)."""
    return 2.0 * tokens * (4.0 + 2.0 * mlp_ratio) * width**2 + 4.0 * tokens**2 * width


def image_tokens(model: ModelConfig) -> int:
    """Patches of the image tower plus its class token: (image_size // patch_size)² + 1."""
    return (model.image_size // model.patch_size) ** 2 + 1


def image_forward_flops(model: ModelConfig) -> float:
    """Forward FLOPs of the image tower's transformer layers for one image (ViT-S/16: 9.08e9)."""
    return model.vision_layers * layer_forward_flops(image_tokens(model), model.vision_width, model.vision_mlp_ratio)


def text_forward_flops(model: ModelConfig) -> float:
    """Forward FLOPs of the text tower's transformer layers for one text of ``context_length``
    tokens (12 layers × 512 wide at 77 tokens: 5.96e9; the text MLP ratio is 4)."""
    return model.text_layers * layer_forward_flops(model.context_length, model.text_width, 4.0)


@dataclass(frozen=True)
class StepFlops:
    """Training FLOPs of one variant at one model size. ``images``/``texts``: items encoded per sample;
    ``per_sample``: training FLOPs of one sample (3 × forward); ``per_step(batch)``: of one
    optimizer step over ``batch`` samples (all GPUs of a run together)."""

    image_forward: float
    text_forward: float
    images: int
    texts: int

    @property
    def per_sample(self) -> float:
        return TRAIN_FACTOR * (self.images * self.image_forward + self.texts * self.text_forward)

    def per_step(self, batch: int) -> float:
        return batch * self.per_sample


def items_per_sample(variant: VariantConfig) -> tuple[int, int]:
    """(images, texts) one training sample puts through the towers under ``variant``."""
    boxes = 1 if variant.use_boxes else 0
    hard = 0 if variant.hard_negatives == "none" else 1
    return 1 + boxes, 1 + boxes + hard


def step_flops(model: ModelConfig, variant: VariantConfig) -> StepFlops:
    """The FLOP model of one training sample of ``variant`` on ``model`` (e.g. CLIP at S: 3 ×
    (9.08 + 5.96) GFLOP = 45.1 GFLOP per sample, 34.7 TFLOP per step of 768)."""
    images, texts = items_per_sample(variant)
    return StepFlops(image_forward_flops(model), text_forward_flops(model), images, texts)


def step_seconds(flops_per_step: float, mfu: float, peak_tflops: float, gpus: int = 1) -> float:
    """Seconds of one optimizer step when ``gpus`` devices of ``peak_tflops`` TFLOP/s each run at
    model-FLOPs utilisation ``mfu`` (a fraction in (0, 1]): flops / (gpus · mfu · peak)."""
    return flops_per_step / (max(gpus, 1) * mfu * peak_tflops * 1e12)
