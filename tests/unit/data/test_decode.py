"""``data.decode_draft``: JPEG DCT-domain downscaling on decode, and the worker's shared-memory batch.

Off, the loader's batches are the plain path's, bit for bit (also from worker processes). On, the
reduction keeps every region the sample uses at least S px per side (a small box forces factor 1),
the pixels stay close to the full decode, and the run's identity says so (another hash; the
default's unchanged).
"""

from __future__ import annotations

import io
import itertools
import json
import math

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw
from torch.utils.data import DataLoader, IterableDataset

from argent.config import DataConfig, experiment_from_dict
from argent.data.formats.grounded import crop_region, iter_records
from argent.data.image_cache import (
    RATIO,
    TRAIN_SCALE,
    augment,
    crop_pixels,
    draft_factor,
    pad_square,
    resize_center,
    scale_box,
    to_float,
)
from argent.data.images import decode_image, decode_image_draft, eval_transform, pad_to_square
from argent.data.loaders import TrainStream, train_loader
from argent.data.shards import ShardWriter
from tests.fixtures import ROOT

W, H, S = 640, 480, 64
SMALL_KEY = "p0003"  # its box is too small for any reduction at S


def bound(factor: int, augment_on: bool) -> float:
    """The stated bound on mean |full decode - reduced decode| of one output image, [0, 1] units, S = 64.

    Measured on these photos: without augmentation 0.001 / 0.002 / 0.007 (image) at factor 2 / 4 / 8 and
    up to 0.023 for a factor-8 crop (pad_square centres at whole reduced pixels: up to half of one off);
    with augmentation the window, drawn on the full size and scaled, moves by up to half a reduced
    pixel: 0.003-0.015 at factor 2 and 4, up to 0.021 at 8."""
    return 0.03 if factor == 8 else 0.02 if augment_on else 0.01


def photo(seed: int, width: int = W, height: int = H) -> bytes:
    """A real-ish photo: a smooth colour gradient with shapes and edges, saved as a quality-90 JPEG."""
    y, x = np.mgrid[0:height, 0:width] / max(width, height)
    phase = seed * 0.7
    rgb = np.stack([128 + 100 * np.sin(3 * x + phase), 128 + 100 * np.cos(2 * y - phase), 255 * x * y], axis=-1)
    image = Image.fromarray(rgb.clip(0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        x0, y0 = rng.integers(0, width - 40), rng.integers(0, height - 40)
        x1, y1 = x0 + rng.integers(20, width // 3), y0 + rng.integers(20, height // 3)
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=colour, outline=(0, 0, 0), width=3)
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> str:
    """Two shards of 640×480 photos, one box each: large boxes, and one record with a small box."""
    root = tmp_path_factory.mktemp("photos")
    for s in range(2):
        with ShardWriter(root / f"shard-{s:06d}.tar") as writer:
            for i in range(4 * s, 4 * s + 4):
                box = [0.1, 0.1, 0.2, 0.2] if f"p{i:04d}" == SMALL_KEY else [0.05, 0.1, 0.9, 0.95]
                meta = {"caption": "a red ball", "width": W, "height": H, "noun_chunks": [[2, 10, *box, 1.0]]}
                writer.write(f"p{i:04d}", {"jpg": photo(i), "json": json.dumps(meta).encode()})
    return str(root / "shard-*.tar")


def batches(shards: str, n: int, **kw) -> list[dict]:
    cfg = DataConfig(train_shards=shards, augment=kw.pop("augment", False), decode_draft=kw.pop("draft", False))
    args = {"batch_size": 4, "image_size": S, "context_length": 16, "use_boxes": True, "seed": 0, "shuffle_buffer": 4}
    return list(itertools.islice(iter(train_loader(cfg, **(args | kw))), n))


def plain(shards: str, keys: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain path without augmentation: full decode, PIL padding and crop, v2 eval transform."""
    records = {r.key: r for r in iter_records(shards)}
    tf = eval_transform(S)
    images = [decode_image(records[k].image_bytes, k) for k in keys]
    return (torch.stack([tf(pad_to_square(im)) for im in images]),
            torch.stack([tf(crop_region(im, records[k].regions[0].box)) for im, k in zip(images, keys)]))


@pytest.mark.parametrize("workers", [0, 2])
def test_off_is_the_plain_path_bit_for_bit(shards, workers):
    for batch in batches(shards, 3, data_streams=max(1, workers), num_workers=workers):
        image, crop = plain(shards, batch["key"])
        assert torch.equal(batch["image"], image) and torch.equal(batch["crop"], crop)


class _Stacks(IterableDataset):
    def __init__(self, images: list[torch.Tensor]) -> None:
        self.images = images

    def __iter__(self):
        yield TrainStream._stack(self.images)


def test_the_workers_shared_memory_batch_is_to_float_of_the_stack():
    images = [torch.randint(0, 256, (3, 24, 24), dtype=torch.uint8) for _ in range(5)]
    (from_worker,) = DataLoader(_Stacks(images), batch_size=None, num_workers=1)
    assert torch.equal(from_worker, to_float(torch.stack(images)))
    assert torch.equal(TrainStream._stack(images), to_float(torch.stack(images)))


def smallest_window(side: int) -> int:
    """The smaller side of RandomResizedCrop's smallest window on a side × side square."""
    return round(math.sqrt(side * side * TRAIN_SCALE[0] / (1 / RATIO[0])))


def test_factor_keeps_every_region_at_least_s():
    data = photo(1)
    rng = np.random.default_rng(0)
    for _ in range(60):
        size = int(rng.choice([32, 64, 96, 224]))
        boxes = []
        for _ in range(int(rng.integers(0, 3))):
            x0, y0 = int(rng.integers(0, W - 20)), int(rng.integers(0, H - 20))
            boxes.append((x0, y0, int(rng.integers(x0 + 10, W + 1)), int(rng.integers(y0 + 10, H + 1))))
        for augment_on in (True, False):
            factor = draft_factor(W, H, boxes, size, augment=augment_on)
            image, applied = decode_image_draft(data, "x", factor)
            assert applied == factor and image.size == (math.ceil(W / factor), math.ceil(H / factor))
            # the largest that keeps them: one step further would not
            full = [max(W, H)] + [max(x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes]
            if factor < 8:
                assert min(full) * (math.sqrt(0.375) if augment_on else 1) / (2 * factor) < size
            sides = [max(image.size)] + [max(x1 - x0, y1 - y0) for x0, y0, x1, y1 in
                                         (scale_box(b, factor, *image.size) for b in boxes)]
            if factor > 1:  # reduced: every region, and its smallest crop window, still >= S
                assert min(smallest_window(s) if augment_on else s for s in sides) >= size, (factor, boxes, size)


def test_factor_examples():
    assert draft_factor(W, H, [], S, augment=False) == 8  # 640 / 8 = 80 >= 64
    assert draft_factor(W, H, [], S, augment=True) == 4  # 640 * 0.612 / 4 = 98 >= 64; / 8 = 49 < 64
    assert draft_factor(W, H, [(64, 48, 128, 96)], S, augment=False) == 1  # a 64-px box: no reduction
    assert draft_factor(W, H, [(0, 0, 400, 300)], S, augment=True) == 2  # 400 * 0.612 / 2 = 122; / 4 = 61
    assert draft_factor(256, 256, [], 224, augment=True) == 1  # HierarCaps' 256-px photos at 224: never
    assert draft_factor(4000, 6, [], 32, augment=False) == 4  # a 6-px-high strip: at most its height
    assert scale_box((3, 5, 101, 99), 4, 160, 120) == (0, 1, 26, 25)  # outward
    assert scale_box((3, 5, 101, 99), 1, 160, 120) == (3, 5, 101, 99)


def test_draft_pixels_are_close_to_the_full_decode():
    data = photo(2)
    full = pad_square(draft_pixels_of(data, 1))
    for factor in (2, 4, 8):  # each at most what draft_factor allows for the whole image at S
        reduced = pad_square(draft_pixels_of(data, factor))
        assert reduced.shape[1] == math.ceil(W / factor)
        diff = (to_float(resize_center(full, S)) - to_float(resize_center(reduced, S))).abs().mean()
        assert diff < bound(factor, False), factor
        for seed in range(4):  # with augmentation: the window drawn on the full-size frame
            a = to_float(augment(full, S, TRAIN_SCALE, seed))
            b = to_float(augment(reduced, S, TRAIN_SCALE, seed, frame=(W, W)))
            assert (a - b).abs().mean() < bound(factor, True), factor
            # drawn on the reduced image instead, the same seed picks another window
            assert (a - to_float(augment(reduced, S, TRAIN_SCALE, seed))).abs().mean() > (a - b).abs().mean()
    box = (100, 60, 500, 420)
    factor = draft_factor(W, H, [box], S, augment=True)
    reduced = pad_square(draft_pixels_of(data, factor))
    a = to_float(augment(crop_pixels(full, box), S, TRAIN_SCALE, 0))
    b = to_float(augment(crop_pixels(reduced, scale_box(box, factor, reduced.shape[2], reduced.shape[1])), S,
                         TRAIN_SCALE, 0, frame=(400, 400)))
    assert factor == 2 and (a - b).abs().mean() < bound(factor, True)


def draft_pixels_of(data: bytes, factor: int) -> torch.Tensor:
    image, applied = decode_image_draft(data, "x", factor)
    assert applied == factor
    return torch.from_numpy(np.array(image)).permute(2, 0, 1)


def test_on_reduces_only_where_it_may_and_stays_close(shards):
    off, on = batches(shards, 4), batches(shards, 4, draft=True)
    differs = 0
    for a, b in zip(off, on):
        assert a["key"] == b["key"]
        for i, key in enumerate(a["key"]):
            same = torch.equal(a["image"][i], b["image"][i]) and torch.equal(a["crop"][i], b["crop"][i])
            if key == SMALL_KEY:
                assert same  # its box needs the full size: decoded exactly as without the switch
                continue
            differs += not same
            assert (a["image"][i] - b["image"][i]).abs().mean() < bound(8, False)  # factor 8 here
            assert (a["crop"][i] - b["crop"][i]).abs().mean() < bound(8, False)
    assert differs > 0


def test_on_with_augmentation_and_workers(shards):
    on = batches(shards, 2, draft=True, augment=True, data_streams=2, num_workers=2)
    off = batches(shards, 2, augment=True, data_streams=2, num_workers=2)
    assert [b["key"] for b in on] == [b["key"] for b in off]
    assert all(b["image"].shape == (4, 3, S, S) and b["crop"].shape == (4, 3, S, S) for b in on)
    # the window is drawn on the full-size frame: the same window up to rounding, the same draws
    for a, b in zip(on, off):
        for i in range(len(a["key"])):
            assert (a["image"][i] - b["image"][i]).abs().mean() < bound(4, True)  # factor 4 (or 1) here
            assert (a["crop"][i] - b["crop"][i]).abs().mean() < bound(4, True)


def test_a_png_is_decoded_in_full():
    image = Image.new("RGB", (300, 200), (10, 200, 30))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    decoded, applied = decode_image_draft(buf.getvalue(), "x", 4)
    assert applied == 1 and decoded.size == (300, 200)


def test_the_switch_is_part_of_the_run_identity():
    root = ROOT
    default, off, on = (experiment_from_dict(cfg, "argent", "tiny", 0, base_dir=root)
                        for cfg in ({}, {"data": {"decode_draft": False}}, {"data": {"decode_draft": True}}))
    # a new field at its default adds nothing to the identity: no run's hash changes
    assert "decode_draft" not in json.dumps(default.identity()) and default.result_hash() == off.result_hash()
    assert on.identity()["data"]["decode_draft"] is True and on.result_hash() != default.result_hash()
