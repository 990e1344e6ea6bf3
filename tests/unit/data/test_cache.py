"""The decoded-image cache and the loader's tensor pixel path: the same batches, bit for bit, with
and without the cache, and the same pixels as the PIL path the loader used before."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms.v2 import functional as TF

from argent.config import DataConfig, experiment_from_dict
from argent.data.formats.grounded import crop_region, iter_records
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.image_cache import (
    MARKER,
    ImageCache,
    augment,
    build,
    crop_pixels,
    main,
    open_cache,
    pad_square,
    record_pixels,
    resize_center,
    to_float,
)
from argent.data.images import decode_image, eval_transform, pad_to_square, train_transform
from argent.data.loaders import train_loader
from argent.data.shards import ShardWriter, expand_shards
from argent.models.tokenizer import _tokenizer, tokenize
from tests.fixtures import ROOT

B, S, L = 8, 32, 24


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    manifest = generate(HiershapesParams(seed=3, train_scenes=48, val_scenes=10, test_scenes=0, per_class=1,
                                         shard_size=12), out)
    return out, manifest["min_box_area"]


@pytest.fixture(scope="module")
def cache(data, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cache") / "train"
    build(str(data[0] / "train" / "shard-*.tar"), folder)
    return folder


def take(data, n: int, **kw) -> list[dict]:
    out, min_area = data
    data_cfg = DataConfig(train_shards=str(out / "train" / "shard-*.tar"), min_box_area=min_area,
                          **{k: kw.pop(k) for k in ("image_cache", "augment") if k in kw})
    args = {"batch_size": B, "image_size": S, "context_length": L, "use_boxes": True, "seed": 0, "shuffle_buffer": 16} | kw
    return list(itertools.islice(iter(train_loader(data_cfg, **args)), n))


def identical(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(torch.equal(x[k], y[k]) if torch.is_tensor(x[k]) else x[k] == y[k] for k in x)
        for x, y in zip(a, b))


def test_cache_holds_every_image_as_decoded(data, cache):
    meta = json.loads((cache / MARKER).read_text())
    assert meta["images"] == 48 and len(meta["shards"]) == 4
    opened = ImageCache(cache)
    for record in iter_records(str(data[0] / "train" / "shard-*.tar"), min_box_area=0):
        assert np.array_equal(opened.pixels(record.image_bytes), np.asarray(decode_image(record.image_bytes, "x")))
    assert opened.pixels(b"not an image in the cache") is None and opened.misses == 1


@pytest.mark.parametrize("augment_on", [True, False])
def test_same_batches_with_and_without_the_cache(data, cache, augment_on):
    plain = take(data, 10, augment=augment_on)  # 80 records: past one epoch of 48
    cached = take(data, 10, augment=augment_on, image_cache=str(cache))
    assert identical(plain, cached)
    # and with worker processes (each opens the cache itself), resumed mid-stream
    workers = {"augment": augment_on, "data_streams": 2, "num_workers": 2, "start_batch": 3}
    assert identical(take(data, 4, **workers), take(data, 4, image_cache=str(cache), **workers))


def test_cache_of_other_shards_is_not_used(data, cache, tmp_path, caplog):
    out, _ = data
    shards = expand_shards(str(out / "train" / "shard-*.tar"))
    assert open_cache(cache, shards) is not None
    assert open_cache(cache, shards[:2]) is None  # built from more shards than these
    changed = tmp_path / shards[0].name
    raw = bytearray(shards[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    changed.write_bytes(bytes(raw))  # same name, other bytes
    assert open_cache(cache, [changed, *shards[1:]]) is None
    assert open_cache(tmp_path / "never-built", shards) is None
    assert "decoding images instead" in caplog.text


def test_a_miss_is_decoded(data, cache, tmp_path):
    """An image the cache does not hold (shards rewritten since) is decoded, the same pixels."""
    image = Image.new("RGB", (20, 12), (10, 200, 30))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    record = next(iter(iter_records(str(data[0] / "train" / "shard-*.tar"), min_box_area=0)))
    other = dataclasses.replace(record, image_bytes=buf.getvalue())
    opened = ImageCache(cache)
    assert torch.equal(record_pixels(other, opened), TF.pil_to_tensor(image)) and opened.misses == 1
    assert torch.equal(record_pixels(record, opened), TF.pil_to_tensor(decode_image(record.image_bytes, "x")))


def test_tensor_path_equals_the_pil_path():
    """pad_square, crop_pixels and augment give the pixels the PIL path (pad_to_square, crop_region,
    train_transform in a seeded fork of the RNG) gives, bit for bit, also for boxes past the edge."""
    rng = np.random.default_rng(0)
    for height, width in [(64, 64), (40, 64), (64, 30), (17, 23)]:
        pil = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
        tensor = TF.pil_to_tensor(pil)
        assert torch.equal(pad_square(tensor), TF.pil_to_tensor(pad_to_square(pil)))
        for box in [(0, 0, width, height), (2, 3, 12, 9), (-4, 5, 10, height + 6), (width - 3, 0, width + 5, 4)]:
            assert torch.equal(crop_pixels(tensor, box), TF.pil_to_tensor(crop_region(pil, box))), box
        for seed in range(5):
            with torch.random.fork_rng(devices=[]):
                torch.default_generator.manual_seed(seed)
                expected = train_transform(S)(pil)
            assert torch.equal(to_float(augment(tensor, S, (0.5, 1.0), seed)), expected)
        # Without augmentation the loader's resize_center is eval_transform, also bit for bit.
        assert torch.equal(to_float(resize_center(tensor, S)), eval_transform(S)(pil))
        assert torch.equal(to_float(resize_center(tensor, S)), eval_transform(S)(tensor))


def test_augment_leaves_the_callers_rng_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    augment(torch.zeros(3, 40, 40, dtype=torch.uint8), S, (0.5, 1.0), 123)
    assert torch.equal(torch.rand(3), expected)


def test_cache_switch_is_outside_the_result_hash():
    """Runs with and without the cache are the same run (the switch changes time, not results)."""
    root = ROOT
    with_cache, without = (experiment_from_dict({"data": {"image_cache": folder}}, "clip", "tiny", 0, base_dir=root)
                           for folder in ("results/data/image_cache/x", ""))
    assert with_cache.data.image_cache and with_cache.result_hash() == without.result_hash()


def test_cli_builds_and_refuses_shards_without_images(data, tmp_path, capsys):
    assert main(["--shards", str(data[0] / "train" / "shard-000000.tar"), "--out", str(tmp_path / "c")]) == 0
    assert json.loads(capsys.readouterr().out)["images"] == 12
    # a rebuild from other shards replaces the build: one subfolder, the new one, is read
    assert main(["--shards", str(data[0] / "train" / "shard-00000[12].tar"), "--out", str(tmp_path / "c")]) == 0
    assert len(ImageCache(tmp_path / "c")) == 24 and len([p for p in (tmp_path / "c").iterdir() if p.is_dir()]) == 1
    capsys.readouterr()
    with ShardWriter(tmp_path / "text-only.tar") as writer:
        writer.write("a", {"txt": b"no image"})
    assert main(["--shards", str(tmp_path / "text-only.tar"), "--out", str(tmp_path / "d")]) == 2
    assert "no image decodes" in capsys.readouterr().err and not (tmp_path / "d" / MARKER).exists()


def test_tokenize_caches_rows_exactly():
    texts = ["a red square", "", "A  big   BLUE circle " * 8, "a red square", "x"]
    for length in (8, 24, 77):
        assert torch.equal(tokenize(texts, length), _tokenizer(length)(texts, context_length=length))
    batch = tokenize(["a red square"], 24)
    batch[0, 1] = 0  # a caller writing into its batch must not change the cached row
    assert torch.equal(tokenize(["a red square"], 24), _tokenizer(24)(["a red square"], context_length=24))
    assert tokenize([], 24).shape == (0, 24)
