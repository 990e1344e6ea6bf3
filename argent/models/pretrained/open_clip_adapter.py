"""open_clip models by architecture name plus a local checkpoint: ``open_clip:<path> --arch ViT-B-32``.

open_clip builds the module (``create_model_and_transforms(arch, pretrained=None)``: nothing is
downloaded), its own validation preprocess and tokenizer come with it, and the checkpoint must fit
the built module's state dict exactly (checked before anything is copied). The preprocess is split
in two: the resize / crop / to-tensor part is ``image_transform`` (pixels in [0, 1], the evaluation's
contract), its ``Normalize`` runs inside ``encode_image``; the composition is open_clip's own
transform. Retrieval uses the same transform (open_clip evaluates retrieval with it; there is no
"squeeze" variant). Euclidean geometry: the embedding is open_clip's projection, L2-normalised.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from argent.models.pretrained.base import (
    PretrainedConfig,
    PretrainedError,
    PretrainedModel,
    Transform,
    load_strict,
    read_state_dict,
)

__all__ = ["OpenClipAdapter", "load_open_clip", "split_preprocess"]


def _open_clip() -> Any:
    """open_clip, imported only when an open_clip model is asked for (it loads timm and its zoo)."""
    try:
        return importlib.import_module("open_clip")
    except ImportError:
        raise PretrainedError("the open_clip layout needs open-clip-torch (pip install open-clip-torch)") from None


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    level = logging.root.level
    logging.root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logging.root.setLevel(level)


def split_preprocess(preprocess: Any) -> tuple[Transform, Tensor, Tensor]:
    """open_clip's validation ``Compose`` -> (the same steps without ``Normalize``, mean, std)."""
    steps = list(getattr(preprocess, "transforms", []))
    norms = [t for t in steps if type(t).__name__ == "Normalize"]
    if len(norms) != 1 or steps[-1] is not norms[0]:
        raise PretrainedError(f"open_clip preprocess {preprocess!r}: expected one Normalize as its last step")
    mean = torch.as_tensor(norms[0].mean, dtype=torch.float32).view(3, 1, 1)
    std = torch.as_tensor(norms[0].std, dtype=torch.float32).view(3, 1, 1)
    return type(preprocess)(steps[:-1]), mean, std


def _image_size(model: nn.Module) -> int:
    size = getattr(getattr(model, "visual", None), "image_size", 224)
    return int(max(size)) if isinstance(size, (tuple, list)) else int(size)


class OpenClipAdapter(PretrainedModel):
    """An open_clip model (random weights until a checkpoint is loaded) with the evaluation's interface."""

    geometry = "euclidean"

    def __init__(self, arch: str) -> None:
        super().__init__()
        open_clip = _open_clip()
        if arch not in open_clip.list_models():
            raise PretrainedError(f"open_clip architecture {arch!r} unknown; `python -c \"import open_clip; "
                                  f"print(open_clip.list_models())\"` lists them")
        try:
            with _quiet_root_logger():  # open_clip warns "no pretrained weights loaded": ours come next
                model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
                self._tokenizer = open_clip.get_tokenizer(arch)
        except (OSError, RuntimeError, ValueError) as err:  # e.g. a Hugging Face text tower, offline
            raise PretrainedError(f"open_clip could not build {arch!r} offline ({type(err).__name__}: "
                                  f"{str(err)[:200]})") from None
        self.model = model.eval()
        self.arch = arch
        self.layout_name = f"open_clip:{arch}"
        self._geometric, mean, std = split_preprocess(preprocess)
        self.register_buffer("pixel_mean", mean, persistent=False)
        self.register_buffer("pixel_std", std, persistent=False)
        embed_dim = int(open_clip.get_model_config(arch)["embed_dim"])
        context = int(getattr(self._tokenizer, "context_length", None) or getattr(model, "context_length", 77))
        self.config = PretrainedConfig(embed_dim, context, _image_size(model))

    @property
    def log_logit_scale(self) -> Tensor:
        return self.model.logit_scale

    def image_features(self, images: Tensor) -> Tensor:
        return self.model.encode_image((images - self.pixel_mean) / self.pixel_std, normalize=False)

    def text_features(self, tokens: Tensor) -> Tensor:
        return self.model.encode_text(tokens, normalize=False)

    def image_transform(self, kind: str = "eval") -> Transform:
        return self._geometric  # the same for every protocol (see the module docstring)

    def tokenize(self, texts: list[str]) -> Tensor:
        return self._tokenizer(list(texts)).long()


def load_open_clip(path: str | Path, arch: str) -> OpenClipAdapter:
    """open_clip ``arch`` with the weights of the local file ``path`` (strict, weights only)."""
    adapter = OpenClipAdapter(arch)
    state = read_state_dict(path)
    load_strict(adapter.model, state, adapter.layout_name, str(path),
                hint="Name the architecture the checkpoint was trained with (--arch).")
    return adapter.eval()
