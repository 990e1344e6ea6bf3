"""Model to embeddings: image files, decoded images and texts, encoded in batches on the model's device.

Every evaluation protocol (``argent.evaluation.protocol_runs``, ``argent.evaluation.analysis_run``)
and the probe encode through here. ``reuse_image_embeddings`` lets the protocols of one
``argent evaluate`` call share the embeddings of an image list they all read.

Model API used (the project contract): ``encode_image``, ``encode_text`` (``project=False`` for
prompt averaging), ``similarity``, ``config.embed_dim``, ``config.context_length``. A released model
(``argent.models.pretrained``) brings its own preprocessing and tokenizer (``image_transform(kind)``,
``tokenize(texts)``); ``image_transform`` and ``tokenize_for`` use them when the model has them, and
argent's own (hiershapes-trained runs) otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from argent.data.images import Transform, eval_transform, load_image, squeeze_transform
from argent.data.policy import BadDataError, BadDataPolicy
from argent.models.tokenizer import tokenize

__all__ = ["ImageEmbeddingMemo", "device_of", "encode_images", "encode_pil_images", "encode_texts", "image_transform",
           "reuse_image_embeddings", "similarity_on_cpu", "tokenize_for"]


class _ImageFiles(torch.utils.data.Dataset):
    """Decoded, transformed images; a bad file yields its error message instead of a tensor."""

    def __init__(self, paths: Sequence[Path], transform: Callable) -> None:
        self.paths = list(paths)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[int, Tensor | None, str]:
        try:
            return i, self.transform(load_image(self.paths[i])), ""
        except BadDataError as err:
            return i, None, str(err)


def _collate(batch: list) -> list:
    return batch


def device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def image_transform(model: Any, kind: str = "eval") -> Transform:
    """The model's image transform to pixels in [0, 1]: ``eval`` (resize the shorter side, centre crop)
    or ``squeeze`` (resize to S×S, retrieval). A released model's own (its resize, crop and
    interpolation); argent's for a trained run."""
    if kind not in ("eval", "squeeze"):
        raise ValueError(f"image transform kind {kind!r}: expected 'eval' or 'squeeze'")
    own = getattr(model, "image_transform", None)
    if callable(own):
        return own(kind)
    make = squeeze_transform if kind == "squeeze" else eval_transform
    return make(model.config.image_size)


def tokenize_for(model: Any, texts: Sequence[str]) -> Tensor:
    """Token ids (N, L) for ``model``: a released model's own tokenizer, else argent's at the model's context length."""
    own = getattr(model, "tokenize", None)
    if callable(own):
        return own(list(texts))
    return tokenize(list(texts), model.config.context_length)


@dataclasses.dataclass
class ImageEmbeddingMemo:
    """Image embeddings already computed in this block, and how often they were reused."""

    entries: dict[tuple, tuple[Tensor, list[int], list[tuple[str, str]]]] = dataclasses.field(default_factory=dict)
    hits: int = 0
    images_reused: int = 0


_MEMO: ImageEmbeddingMemo | None = None


@contextlib.contextmanager
def reuse_image_embeddings() -> Iterator[ImageEmbeddingMemo]:
    """Within this block ``encode_images`` embeds each image list once per (model, transform,
    batch size, projection) and hands the same tensor to every later protocol that asks for it
    (e.g. PEP, HierarCaps and the analysis read the same image folder). Reused results are the very
    tensors the first call computed, so every metric is unchanged; the skipped images of that
    call are counted again in each later caller's policy. The caller promises that the model's
    weights do not change inside the block (``argent evaluate``: one checkpoint per process)."""
    global _MEMO
    outer = _MEMO
    _MEMO = outer if outer is not None else ImageEmbeddingMemo()
    try:
        yield _MEMO
    finally:
        _MEMO = outer


@torch.no_grad()
def encode_images(
    model: Any,
    paths: Sequence[Path],
    transform: Callable,
    batch_size: int,
    policy: BadDataPolicy,
    num_workers: int = 0,
    project: bool = True,
) -> tuple[Tensor, list[int]]:
    """Embed image files: -> (embeddings (K, D) float32 on CPU, indices of the K usable paths).

    A missing or corrupt image goes through ``policy`` (reason ``bad_image``): counted and left
    out (skip) or a ``BadDataError`` naming the file (strict). Inside ``reuse_image_embeddings`` a
    repeated request is answered from memory.
    """
    key = (id(model), tuple(str(p) for p in paths), repr(transform), batch_size, project)
    if _MEMO is not None and key in _MEMO.entries:
        emb, kept, bad = _MEMO.entries[key]
        for reason, error in bad:
            policy.bad(reason, error)
        _MEMO.hits += 1
        _MEMO.images_reused += len(kept)
        return emb.clone(), list(kept)  # a copy: a protocol may work in place on its tensor
    bad_seen: list[tuple[str, str]] = []
    device = device_of(model)
    loader = torch.utils.data.DataLoader(
        _ImageFiles(paths, transform), batch_size=batch_size, num_workers=num_workers, collate_fn=_collate
    )
    chunks, kept = [], []
    for batch in loader:
        good = []
        for i, tensor, error in batch:
            if tensor is None:
                policy.bad("bad_image", error)
                bad_seen.append(("bad_image", error))
            else:
                good.append((i, tensor))
        if good:
            images = torch.stack([t for _, t in good]).to(device)
            chunks.append(model.encode_image(images, project=project).float().cpu())
            kept.extend(i for i, _ in good)
    dim = model.config.embed_dim
    emb = torch.cat(chunks) if chunks else torch.empty(0, dim)
    if _MEMO is not None:
        _MEMO.entries[key] = (emb, list(kept), bad_seen)
    return emb, kept


@torch.no_grad()
def encode_texts(model: Any, texts: Sequence[str], batch_size: int, project: bool = True) -> Tensor:
    """Embed texts: (N,) strings -> (N, D) float32 on CPU."""
    device = device_of(model)
    out = []
    for s in range(0, len(texts), batch_size):
        tokens = tokenize_for(model, texts[s : s + batch_size]).to(device)
        out.append(model.encode_text(tokens, project=project).float().cpu())
    return torch.cat(out) if out else torch.empty(0, model.config.embed_dim)


def similarity_on_cpu(model: Any) -> Callable[[Tensor, Tensor], Tensor]:
    """``model.similarity`` on the model's device, results back on the CPU."""
    device = device_of(model)
    return lambda x, y: model.similarity(x.to(device), y.to(device)).cpu()


@torch.no_grad()
def encode_pil_images(model: Any, images: list, transform: Callable, batch_size: int, project: bool) -> Tensor:
    """Embed decoded PIL images (crops, padded full images): -> (N, D) float32 on CPU."""
    device = device_of(model)
    out = []
    for s in range(0, len(images), batch_size):
        batch = torch.stack([transform(img) for img in images[s : s + batch_size]]).to(device)
        out.append(model.encode_image(batch, project=project).float().cpu())
    return torch.cat(out) if out else torch.empty(0, model.config.embed_dim)
