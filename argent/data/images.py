"""Image loading and the torchvision v2 transforms every loader shares.

- ``load_image`` / ``decode_image``: RGB PIL images, or ``BadDataError`` naming the file (or shard row)
  when the image is missing or cannot be decoded.
- ``decode_image_draft``: ``decode_image`` with JPEG DCT-domain downscaling by 2, 4 or 8 (PIL's
  ``Image.draft``): a smaller inverse DCT and colour conversion, the entropy decoding unchanged (16–19 %
  less decode time at 1/2, docs/throughput.md); the caller picks a factor that keeps what it needs
  (``image_cache.draft_factor``, the ``data.decode_draft`` switch).
- ``image_size_of``: the (width, height) from the header only, without decoding pixels (cheap; used
  to validate boxes before any decode).
- ``pad_to_square``: HyCoCLIP's "border" mode, centred, white padding (docs/method.md §5).
- ``eval_transform`` (Resize shorter side, bicubic + CenterCrop), ``squeeze_transform`` (resize to
  S×S, no crop; retrieval), ``train_transform`` (RandomResizedCrop, scale 0.5–1, bicubic).
  All return float32 (3, S, S) tensors in [0, 1].
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import torch
from PIL import Image, UnidentifiedImageError
from torchvision.transforms import v2

from argent.data.policy import BadDataError

IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
WHITE = (255, 255, 255)
_DECODE_ERRORS = (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError)

Transform = Callable[[Image.Image], torch.Tensor]


def load_image(path: str | Path) -> Image.Image:
    """Decode the image at ``path`` to RGB; ``BadDataError`` naming the file if missing or corrupt."""
    path = Path(path)
    if not path.is_file():
        raise BadDataError(f"{path}: image file not found")
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except _DECODE_ERRORS as err:
        raise BadDataError(f"{path}: corrupt image ({err}); replace or remove the file") from None


def decode_image(data: bytes, where: str) -> Image.Image:
    """Decode image bytes (e.g. a shard member) to RGB; ``BadDataError`` naming ``where`` if corrupt."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.convert("RGB")
    except _DECODE_ERRORS as err:
        raise BadDataError(f"{where}: corrupt image ({err})") from None


def decode_image_draft(data: bytes, where: str, factor: int) -> tuple[Image.Image, int]:
    """(RGB image, applied factor): a JPEG decoded at 1/``factor`` of its size in the DCT domain
    (``factor`` in 1, 2, 4, 8; each side ceil(side / factor)); any other image, or ``factor`` 1, is
    decoded in full (applied factor 1). ``BadDataError`` naming ``where`` if corrupt."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            applied = 1
            if factor > 1 and img.format == "JPEG":
                width, height = img.size
                # PIL picks the largest scale whose output is at least this size: exactly ``factor``.
                drafted = img.draft(None, (max(1, width // factor), max(1, height // factor)))
                if drafted is not None:
                    applied = round(width / drafted[1][2])
            return img.convert("RGB"), applied
    except _DECODE_ERRORS as err:
        raise BadDataError(f"{where}: corrupt image ({err})") from None


def image_size_of(data: bytes | str | Path) -> tuple[int, int] | None:
    """(width, height) from the image header, or None if it is not a readable image. No pixel decode."""
    try:
        source = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else Path(data)
        with Image.open(source) as img:
            width, height = img.size
    except (*_DECODE_ERRORS, FileNotFoundError):
        return None
    if width <= 0 or height <= 0:
        return None
    return width, height


def pad_to_square(img: Image.Image, fill: tuple[int, int, int] = WHITE) -> Image.Image:
    """Pad the shorter side so the image is square, content centred (HyCoCLIP "border" mode)."""
    width, height = img.size
    if width == height:
        return img
    side = max(width, height)
    out = Image.new("RGB", (side, side), fill)
    out.paste(img, ((side - width) // 2, (side - height) // 2))
    return out


def eval_transform(image_size: int) -> Transform:
    """Resize the shorter side to S (bicubic) then CenterCrop S; float32 (3,S,S) in [0,1]."""
    return _on_square(image_size, v2.Compose([
        v2.ToImage(),
        v2.Resize(image_size, interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
        v2.CenterCrop(image_size),
        v2.ToDtype(torch.float32, scale=True),
    ]))


def squeeze_transform(image_size: int) -> Transform:
    """Resize to S×S (bicubic, aspect not kept, no crop) as in retrieval; float32 (3,S,S) in [0,1]."""
    return _on_square(image_size, v2.Compose([
        v2.ToImage(),
        v2.Resize((image_size, image_size), interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
        v2.ToDtype(torch.float32, scale=True),
    ]))


def _on_square(image_size: int, transform: v2.Compose) -> v2.Compose:
    """Tag ``eval_transform`` and ``squeeze_transform``: on a square image both are one bicubic resize
    to S×S, the same pixels, so evaluation may decode and encode such an image once for both
    (``argent.evaluation.encoding``)."""
    transform.square_key = f"bicubic-antialias-{image_size}"
    return transform


def train_transform(image_size: int, scale: tuple[float, float] = (0.5, 1.0)) -> Transform:
    """MERU/HyCoCLIP augmentation: RandomResizedCrop(S, scale 0.5–1, bicubic) + ToTensor.

    Draws from torch's global RNG: loaders call it inside ``torch.random.fork_rng`` with a
    per-sample seed so the stream is reproducible and the caller's RNG is untouched.
    """
    return v2.Compose([
        v2.ToImage(),
        v2.RandomResizedCrop(image_size, scale=scale, interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
        v2.ToDtype(torch.float32, scale=True),
    ])
