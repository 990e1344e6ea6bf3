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
import hashlib
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
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
    """Image embeddings already computed in this block, keyed by image, and how often they were reused.

    ``by_file``: (model, projection, transform, file content digest) -> embedding: an image file read
    by several protocols, or byte copies of it under several folders, is decoded and encoded once.
    ``by_pixels``: (model, projection, pixel digest) -> embedding: two transforms that give the same
    pixels (retrieval's squeeze and the others' centre crop on a square image) encode once."""

    by_file: dict[tuple, Tensor] = dataclasses.field(default_factory=dict)
    by_pixels: dict[tuple, Tensor] = dataclasses.field(default_factory=dict)
    hits: int = 0            # requests answered wholly from memory
    images_reused: int = 0   # images answered from memory, over all requests
    encoded: int = 0         # images through the image tower


_MEMO: ImageEmbeddingMemo | None = None


@contextlib.contextmanager
def reuse_image_embeddings() -> Iterator[ImageEmbeddingMemo]:
    """Within this block ``encode_images`` embeds each image once per (model, transform, projection),
    keyed by the file's content, and hands the same embedding to every later protocol that reads it
    (PEP, HierarCaps, SugarCrepe and retrieval read byte copies of the same test scenes). Every
    metric is unchanged up to float rounding of the batch an image was encoded in; the skipped
    images of a request are counted in each caller's policy. The caller promises that the model's
    weights do not change inside the block (``argent evaluate``: one checkpoint per process)."""
    global _MEMO
    outer = _MEMO
    _MEMO = outer if outer is not None else ImageEmbeddingMemo()
    try:
        yield _MEMO
    finally:
        _MEMO = outer


def _file_key(path: Path, transform: Callable) -> tuple[str, str | None]:
    """(transform key, content digest) of an image file; digest None when it cannot be read (decoding
    then names the error). A transform that gives the same pixels on every square image as its
    sibling (``square_key``: argent's centre crop and squeeze) shares its key on square images."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return repr(transform), None
    key = repr(transform)
    square = getattr(transform, "square_key", None)
    if square is not None:
        try:
            with Image.open(io.BytesIO(data)) as img:  # the header only: no decode
                width, height = img.size
            key = square if width == height else key
        except (OSError, ValueError, Image.DecompressionBombError):
            pass  # decoding names the error
    return key, hashlib.blake2b(data, digest_size=16).hexdigest()


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
    out (skip) or a ``BadDataError`` naming the file (strict). Inside ``reuse_image_embeddings`` an
    image embedded before (same content, transform and model) is answered from memory; within one
    request, duplicates are encoded once either way.
    """
    memo = _MEMO if _MEMO is not None else ImageEmbeddingMemo()
    model_key = (id(model), project)
    file_keys = [(*model_key, *_file_key(p, transform)) for p in paths]
    found: dict[int, Tensor] = {i: memo.by_file[k] for i, k in enumerate(file_keys) if k[-1] and k in memo.by_file}
    todo = [i for i in range(len(paths)) if i not in found]
    device = device_of(model)
    loader = torch.utils.data.DataLoader(
        _ImageFiles([paths[i] for i in todo], transform), batch_size=batch_size, num_workers=num_workers,
        collate_fn=_collate,
    )
    pending: dict[tuple, list[int]] = {}   # pixel key -> the requested indices that show these pixels
    pixels: dict[tuple, Tensor] = {}
    for batch in loader:
        for j, tensor, error in batch:
            if tensor is None:
                policy.bad("bad_image", error)
                continue
            key = (*model_key, hashlib.blake2b(tensor.numpy().tobytes(), digest_size=16).hexdigest())
            if key in memo.by_pixels:
                found[todo[j]] = memo.by_pixels[key]
            else:
                pending.setdefault(key, []).append(todo[j])
                pixels.setdefault(key, tensor)
    keys = list(pending)
    for s in range(0, len(keys), batch_size):
        chunk = keys[s : s + batch_size]
        images = torch.stack([pixels[k] for k in chunk]).to(device)
        for key, emb in zip(chunk, model.encode_image(images, project=project).float().cpu()):
            memo.by_pixels[key] = emb
            for i in pending[key]:
                found[i] = emb
        memo.encoded += len(chunk)
    kept = sorted(found)
    reused = len(kept) - sum(len(v) for v in pending.values())
    memo.images_reused += reused
    memo.hits += int(bool(kept) and reused == len(kept))
    for i in kept:
        if file_keys[i][-1]:
            memo.by_file[file_keys[i]] = found[i]
    dim = model.config.embed_dim
    emb = torch.stack([found[i] for i in kept]) if kept else torch.empty(0, dim)
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
