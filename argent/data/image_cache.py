"""Decoded-image cache for small training sets, and the loader's per-sample pixel path.

Decoding a JPEG costs about as much as the rest of a sample's loading on the training thread
(docs/throughput.md). For a set that fits in memory (hiershapes: 10,000 scenes of 64×64 px, 120 MB
decoded) the images are decoded once, by the workflow's ``image_cache`` rule::

    python -m argent.data.image_cache --shards 'data/hiershapes/train/shard-*.tar' --out results/data/image_cache/hiershapes_train

into a folder holding ``cache.json`` (written last: the shards and their SHA-256, the count, and the
build: a subfolder named by the shards' content) and, in that subfolder, ``pixels.npy`` (every
image's RGB bytes, H×W×3 uint8, one after the other; read as a memory map) and ``index.npz`` (per
image: a digest of its encoded bytes, its offset, height and width). A rebuild writes a new
subfolder before it points ``cache.json`` at it, so a reader never pairs one build's index with
another's pixels.

An entry is found by the BLAKE2b digest of the record's *encoded* image bytes, so a cache can never
hand out the pixels of another image: an image that changed, or a shard the cache was not built
from, simply misses and is decoded as before. The pixels of a hit are the very bytes PIL's decoder
produced, and both paths go through the same tensor code after that (``record_pixels``,
``crop_pixels``, ``augment``), so batches are bit for bit the same with and without the cache
(tests/unit/data/test_cache.py).

``augment`` is ``images.train_transform`` (ToImage, RandomResizedCrop bicubic antialiased, ToDtype)
without the per-call dispatch of a v2 ``Compose``: the same random draws (torchvision's public
``RandomResizedCrop.get_params``) and the same kernel on the same uint8 tensor, hence the same
floats, at about half the cost.

``data.decode_draft`` (off by default; it changes pixels, hence the run's identity): a JPEG is decoded
at 1/2, 1/4 or 1/8 of its size in the DCT domain (``draft_pixels``) when ``draft_factor`` finds that
every region the sample uses (the padded-square image; each box's square crop) keeps at least the
output side S in decoded pixels, and with augmentation RandomResizedCrop's smallest window (area
0.5, aspect 3/4: sqrt(0.375) of the side) does too: draft never makes a crop upsample where the full
decode would not. Boxes are scaled by the applied factor (``scale_box``, outward). A record that needs
the full size (a small box) is decoded exactly as without the switch, from the cache if it has it; a
reduced decode skips the cache, whose pixels are full size, so batches are the same with and without
the cache in both settings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torchvision import transforms as v1
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as TF

from argent.data.formats.grounded import IMAGE_KEYS, GroundedRecord
from argent.data.images import WHITE, decode_image, decode_image_draft
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import expand_shards, iter_shard
from argent.io import ArgentError, atomic_output, atomic_write_json, file_sha256, read_json
from argent.runs.layout import IMAGE_CACHE_MARKER

log = logging.getLogger("argent.data")

CACHE_VERSION = 1
MARKER = IMAGE_CACHE_MARKER  # written last: the cache is complete
RATIO = (3.0 / 4.0, 4.0 / 3.0)  # RandomResizedCrop's default aspect-ratio range (train_transform uses it)
TRAIN_SCALE = (0.5, 1.0)  # train_transform's default area range
DRAFT_FACTORS = (8, 4, 2)  # the JPEG decoder's DCT-domain reductions, largest first


def image_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


# ---- the pixel path every training sample takes (cached or decoded) ----------------------------


def to_chw(pixels: np.ndarray) -> torch.Tensor:
    """H×W×3 uint8 -> 3×H×W uint8 tensor, as ``v2.ToImage`` makes of a PIL image (a permuted view)."""
    return torch.from_numpy(pixels).permute(2, 0, 1)


def pad_square(image: torch.Tensor) -> torch.Tensor:
    """``images.pad_to_square`` on a 3×H×W uint8 tensor: content centred, white padding."""
    _, height, width = image.shape
    if height == width:
        return image
    side = max(height, width)
    out = torch.tensor(WHITE, dtype=torch.uint8).view(3, 1, 1).expand(3, side, side).clone()
    top, left = (side - height) // 2, (side - width) // 2
    out[:, top:top + height, left:left + width] = image
    return out


def crop_pixels(image: torch.Tensor, box: tuple[int, int, int, int]) -> torch.Tensor:
    """``formats.grounded.crop_region`` on a tensor: PIL's ``crop`` (black outside the image), then
    ``pad_square``."""
    x0, y0, x1, y1 = box
    _, height, width = image.shape
    if 0 <= x0 and 0 <= y0 and x1 <= width and y1 <= height:
        crop = image[:, y0:y1, x0:x1]
    else:
        crop = torch.zeros(3, y1 - y0, x1 - x0, dtype=torch.uint8)
        sx0, sy0, sx1, sy1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        if sx1 > sx0 and sy1 > sy0:
            crop[:, sy0 - y0:sy1 - y0, sx0 - x0:sx1 - x0] = image[:, sy0:sy1, sx0:sx1]
    return pad_square(crop)


def augment(image: torch.Tensor, size: int, scale: tuple[float, float], seed: int,
            frame: tuple[int, int] | None = None) -> torch.Tensor:
    """``train_transform(size, scale)`` of a 3×H×W uint8 tensor, its random draws seeded by ``seed``
    (a forked CPU generator: the caller's RNG is untouched); uint8 out, ``to_float`` converts.

    ``frame``: the full-size (height, width) of a region that ``image`` holds reduced (a draft decode):
    the window is drawn on the full size, as without the reduction, and scaled to ``image``, so the
    switch changes the decode's resolution, not the augmentation's draws."""
    _, rows, cols = image.shape
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        # get_params reads only the shape: a zero-stride stand-in for the full-size frame
        drawn_on = image if frame is None else torch.empty((), dtype=torch.uint8).expand(3, *frame)
        top, left, height, width = v1.RandomResizedCrop.get_params(drawn_on, list(scale), list(RATIO))
    if frame is not None:
        sy, sx = rows / frame[0], cols / frame[1]
        top, left = min(round(top * sy), rows - 1), min(round(left * sx), cols - 1)
        height, width = max(1, min(round(height * sy), rows - top)), max(1, min(round(width * sx), cols - left))
    return TF.resized_crop(image, top, left, height, width, [size, size],
                           interpolation=v2.InterpolationMode.BICUBIC, antialias=True)


def resize_center(image: torch.Tensor, size: int) -> torch.Tensor:
    """``images.eval_transform(size)`` of a 3×H×W uint8 tensor (shorter side to ``size``, bicubic
    antialiased, centre crop) without a v2 ``Compose``'s per-call dispatch: the same kernels in the same
    order, so the same pixels; uint8 out, ``to_float`` converts (the loader does it once per batch)."""
    image = TF.resize(image, [size], interpolation=v2.InterpolationMode.BICUBIC, antialias=True)
    return TF.center_crop(image, [size, size])


def to_float(image: torch.Tensor) -> torch.Tensor:
    """uint8 -> float32 in [0, 1], as ``v2.ToDtype(float32, scale=True)``."""
    return TF.to_dtype(image, torch.float32, scale=True)


# ---- the cache -----------------------------------------------------------------------------------


class ImageCache:
    """A built cache folder, read-only: ``pixels(data)`` -> H×W×3 uint8 array or None (a miss)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.meta = read_json(self.folder / MARKER)
        if self.meta.get("version") != CACHE_VERSION:
            raise BadDataError(f"{self.folder / MARKER}: cache version {self.meta.get('version')!r}, this code reads "
                               f"{CACHE_VERSION}; rebuild it (python -m argent.data.image_cache)")
        build_dir = self.folder / str(self.meta.get("build", ""))
        index = np.load(build_dir / "index.npz")
        self._pixels = np.load(build_dir / "pixels.npy", mmap_mode="r")
        self._offsets, self._heights, self._widths = index["offsets"], index["heights"], index["widths"]
        self._lookup = {bytes(d): i for i, d in enumerate(index["digests"])}
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._lookup)

    def pixels(self, data: bytes) -> np.ndarray | None:
        i = self._lookup.get(image_digest(data))
        if i is None:
            self.misses += 1
            return None
        self.hits += 1
        h, w, start = int(self._heights[i]), int(self._widths[i]), int(self._offsets[i])
        return np.array(self._pixels[start:start + h * w * 3]).reshape(h, w, 3)

    def covers(self, shards: Sequence[Path]) -> bool:
        """Whether the cache was built from exactly these shard contents (names and SHA-256)."""
        return {Path(s).name: file_sha256(Path(s)) for s in shards} == self.meta.get("shards")


def open_cache(folder: str | Path, shards: Sequence[Path]) -> ImageCache | None:
    """The cache at ``folder`` if it is built and was built from ``shards``' current contents; else None
    with a logged reason (the loader then decodes: the same batches, only slower)."""
    folder = Path(folder)
    if not (folder / MARKER).is_file():
        log.warning("data.image_cache: %s is not built; decoding images instead", folder)
        return None
    try:
        cache = ImageCache(folder)
    except (ArgentError, OSError, KeyError, ValueError) as err:
        log.warning("data.image_cache: %s unreadable (%s); decoding images instead", folder, err)
        return None
    if not cache.covers(shards):
        log.warning("data.image_cache: %s was built from other shards than %d training shard(s); decoding images "
                    "instead (rebuild it: python -m argent.data.image_cache)", folder, len(shards))
        return None
    return cache


def record_pixels(record: GroundedRecord, cache: ImageCache | None) -> torch.Tensor:
    """The record's decoded image as a 3×H×W uint8 tensor: from the cache when it has it, else decoded
    (``BadDataError`` if it does not decode)."""
    pixels = cache.pixels(record.image_bytes) if cache is not None else None
    if pixels is None:
        pixels = np.array(decode_image(record.image_bytes, record.where))
    return to_chw(pixels)


def draft_factor(width: int, height: int, boxes: Sequence[tuple[int, int, int, int]], size: int, *,
                 augment: bool, square: bool = True) -> int:
    """The largest JPEG reduction (8, 4, 2, else 1) that keeps every region the sample uses at least
    ``size`` px per side after reduction: the image (padded to a square when ``square``, else its
    shorter side) and each box's square crop, times sqrt(0.375) with augmentation (the smaller side of
    RandomResizedCrop's smallest window: area 0.5, aspect 3/4). A region already under that in full
    size (a small box) gives 1."""
    shortest = math.sqrt(TRAIN_SCALE[0] * RATIO[0]) if augment else 1.0
    sides = [max(width, height) if square else min(width, height)] + [max(x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes]
    smallest = min(sides) * shortest
    for factor in DRAFT_FACTORS:
        # A region of side L is at least L / factor after reduction (ceil sizes, outward boxes).
        if smallest / factor >= size and min(width, height) >= factor:
            return factor
    return 1


def scale_box(box: tuple[int, int, int, int], factor: int, width: int, height: int) -> tuple[int, int, int, int]:
    """A full-size pixel box on an image reduced by ``factor`` to ``width`` × ``height``: outward, so the
    region is all there (reduced pixel i covers full-size pixels [i·factor, (i+1)·factor))."""
    if factor == 1:
        return box
    x0, y0, x1, y1 = box
    return x0 // factor, y0 // factor, min(-(-x1 // factor), width), min(-(-y1 // factor), height)


def full_frame(record: GroundedRecord, box: tuple[int, int, int, int] | None, *, square: bool) -> tuple[int, int]:
    """The full-size (height, width) of the region a reduced decode stands for: the box's square crop,
    else the image (its padded square when ``square``); ``augment`` draws its window on it."""
    if box is not None:
        return (max(box[2] - box[0], box[3] - box[1]),) * 2
    return (max(record.width, record.height),) * 2 if square else (record.height, record.width)


def draft_pixels(record: GroundedRecord, cache: ImageCache | None, factor: int) -> tuple[torch.Tensor, int]:
    """(3×H×W uint8 image, applied factor): ``record_pixels`` when ``factor`` is 1, else the JPEG decoded
    at 1/``factor`` (the cache holds full-size pixels and is skipped; a non-JPEG is decoded in full)."""
    if factor == 1:
        return record_pixels(record, cache), 1
    image, applied = decode_image_draft(record.image_bytes, record.where, factor)
    return to_chw(np.array(image)), applied


def build(shards_pattern: str | Sequence[str], out: str | Path) -> dict:
    """Decode every image of the shards into a cache folder at ``out`` (replacing one there)."""
    shards = expand_shards(shards_pattern)
    out = Path(out)
    policy = BadDataPolicy("skip")
    digests: list[bytes] = []
    offsets, heights, widths = [], [], []
    seen: set[bytes] = set()
    chunks: list[np.ndarray] = []
    offset = 0
    for shard in shards:
        for sample in iter_shard(shard, policy):
            data = next((sample[k] for k in IMAGE_KEYS if k in sample), None)
            if data is None:
                continue
            digest = image_digest(data)
            if digest in seen:
                continue
            try:
                pixels = np.asarray(decode_image(data, f"{shard}: row {sample['__row__']}"))
            except BadDataError:
                continue  # not cached: the loader decodes it, fails the same way and counts it
            seen.add(digest)
            digests.append(digest)
            offsets.append(offset)
            heights.append(pixels.shape[0])
            widths.append(pixels.shape[1])
            chunks.append(pixels.reshape(-1))
            offset += pixels.size
    if not digests:
        raise BadDataError(f"{shards_pattern}: no image decodes; nothing to cache")
    shard_hashes = {s.name: file_sha256(s) for s in shards}
    build_id = hashlib.sha256(json.dumps(shard_hashes, sort_keys=True).encode()).hexdigest()[:16]
    with atomic_output(out / build_id / "pixels.npy") as tmp:
        np.save(tmp, np.concatenate(chunks))
    with atomic_output(out / build_id / "index.npz") as tmp:
        np.savez(tmp, digests=np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 16),
                 offsets=np.asarray(offsets, dtype=np.int64), heights=np.asarray(heights, dtype=np.int32),
                 widths=np.asarray(widths, dtype=np.int32))
    meta = {"version": CACHE_VERSION, "build": build_id, "images": len(digests), "bytes": offset,
            "shards": shard_hashes, "skipped": policy.report()}
    atomic_write_json(out / MARKER, meta)
    for old in out.iterdir():  # earlier builds (a reader that still maps one keeps its open file)
        if old.is_dir() and old.name != build_id:
            shutil.rmtree(old, ignore_errors=True)
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m argent.data.image_cache", description="Build a decoded-image cache.")
    p.add_argument("--shards", required=True, help="brace or glob pattern of the .tar shards (data.train_shards)")
    p.add_argument("--out", type=Path, required=True, help="cache folder (data.image_cache)")
    args = p.parse_args(argv)
    try:
        meta = build(args.shards, args.out)
    except (ArgentError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in meta.items() if k != "shards"} | {"shards": len(meta["shards"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
