"""One training step's pieces, shared by the loop, the benchmarks and the DDP tests: both towers
over a batch in one call per modality (``encode_batch``/``BatchEncoder``), optional ``torch.compile``
with a logged fallback, the NaN guard with a single host sync, and mixed precision."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import torch

from argent.config import ExperimentConfig
from argent.models import DualEncoder

log = logging.getLogger("argent.train")

EMBED_KEYS = {"image": "image", "crop": "image", "text": "text", "phrase": "text", "hard_text": "text"}


def encode_batch(model: DualEncoder, batch: dict[str, Any], use_boxes: bool) -> dict[str, torch.Tensor]:
    """Lifted embeddings of every item type present in the batch, one tower call per modality."""
    images = [k for k in ("image", "crop") if k in batch and (k == "image" or use_boxes)]
    texts = [k for k in ("text", "phrase", "hard_text") if k in batch and (k != "phrase" or use_boxes)]
    out: dict[str, torch.Tensor] = {}
    if images:
        feats = model.encode_image(torch.cat([batch[k] for k in images]))
        out.update(zip(images, feats.chunk(len(images))))
    if texts:
        feats = model.encode_text(torch.cat([batch[k] for k in texts]))
        out.update(zip(texts, feats.chunk(len(texts))))
    return out


class BatchEncoder(torch.nn.Module):
    """batch -> (embeddings, c, s). Under DDP every parameter must be used inside the wrapped
    forward (that is where DDP hooks its gradient reduction), so the scalars are read here too."""

    def __init__(self, model: DualEncoder, use_boxes: bool) -> None:
        super().__init__()
        self.model = model
        self.use_boxes = use_boxes

    def forward(self, batch: dict[str, Any]) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        return encode_batch(self.model, batch, self.use_boxes), self.model.curv(), self.model.logit_scale()


def compile_step(fn: Callable, label: str = "the training step") -> Callable:
    """``torch.compile(fn)`` (inductor), falling back to ``fn`` itself, with a logged reason, when
    compilation is unavailable or fails on the first call. The fallback is decided once: later calls
    never mix compiled and eager results."""
    try:
        compiled = torch.compile(fn)
    except Exception as err:  # noqa: BLE001 - any failure to set up compilation means: run eagerly
        log.warning("train.compile: torch.compile unavailable for %s (%s: %s); running eagerly", label,
                    type(err).__name__, err)
        return fn
    chosen: list[Callable] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        if chosen:
            return chosen[0](*args, **kwargs)
        try:
            result = compiled(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - inductor/dynamo errors have no common base class
            log.warning("train.compile: compiling %s failed (%s: %s); running eagerly", label,
                        type(err).__name__, str(err).splitlines()[0] if str(err) else "")
            chosen.append(fn)
            return fn(*args, **kwargs)
        chosen.append(compiled)
        return result

    return run


def to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def hard_negatives(emb: dict[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    if "hard_text" not in emb:
        return None
    return {"text": emb.pop("hard_text"), "concreteness": batch["hard_concreteness"], "mask": batch["has_hard"]}


def first_bad_term(total: torch.Tensor, terms: dict[str, torch.Tensor]) -> str | None:
    # One host sync for the common, all-finite case; the per-term search only when something is not.
    if bool(torch.isfinite(torch.stack([total.detach().float().reshape(())] +
                                       [v.detach().float().reshape(-1).sum() for v in terms.values()])).all()):
        return None
    for name, value in terms.items():
        if not torch.isfinite(value).all():
            return name
    return None if torch.isfinite(total).all() else "total"


def autocast(cfg: ExperimentConfig, device: torch.device) -> contextlib.AbstractContextManager:
    if cfg.train.precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
