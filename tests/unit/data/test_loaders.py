"""Training/evaluation loaders: batch contract, exact resume, rank/worker sharding, hard negatives,
bad data inside the stream, and the ordered evaluation loaders."""

from __future__ import annotations

import io
import itertools
import tarfile
from pathlib import Path

import polars as pl
import pytest
import torch
from PIL import Image

from argent.config import DataConfig
from argent.data.eval_loaders import eval_image_loader, grounded_eval_batches
from argent.data.formats.grounded import crop_region, iter_records
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.images import eval_transform, squeeze_transform
from argent.data.loaders import train_loader
from argent.data.policy import BadDataError
from argent.data.shards import ShardWriter
from argent.models.tokenizer import tokenize

B, S, L = 8, 32, 24


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    manifest = generate(HiershapesParams(seed=1, train_scenes=48, val_scenes=10, test_scenes=0, per_class=1, shard_size=12), out)
    return out, manifest["min_box_area"]


def cfg(data, **changes) -> DataConfig:
    out, min_area = data
    values = dict(train_shards=str(out / "train" / "shard-*.tar"), min_box_area=min_area)
    values.update(changes)
    return DataConfig(**values)


def take(loader, n: int) -> list[dict]:
    return list(itertools.islice(iter(loader), n))


def load(data_cfg: DataConfig, **kw):
    args = dict(batch_size=B, image_size=S, context_length=L, use_boxes=True, seed=0, shuffle_buffer=16)
    args.update(kw)
    return train_loader(data_cfg, **args)


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k] for k in a)


def test_batch_contract(data):
    (batch,) = take(load(cfg(data)), 1)
    assert batch["image"].shape == (B, 3, S, S) and batch["image"].dtype == torch.float32
    assert batch["crop"].shape == (B, 3, S, S) and batch["crop"].dtype == torch.float32
    assert batch["text"].shape == (B, L) and batch["text"].dtype == torch.int64
    assert batch["phrase"].shape == (B, L) and batch["phrase"].dtype == torch.int64
    assert len(batch["key"]) == B and all(isinstance(k, str) for k in batch["key"])
    for name in ("image", "crop"):
        assert 0.0 <= batch[name].min() and batch[name].max() <= 1.0
    assert "hard_text" not in batch
    (plain,) = take(load(cfg(data), use_boxes=False), 1)
    assert set(plain) == {"image", "text", "key"}


@pytest.mark.parametrize("streams,workers,k", [(1, 0, 3), (2, 2, 3), (2, 2, 4), (4, 2, 5), (3, 2, 4)])
def test_start_batch_equals_the_uninterrupted_stream(data, streams, workers, k):
    full = take(load(cfg(data), data_streams=streams, num_workers=workers), k + 3)
    resumed = take(load(cfg(data), data_streams=streams, num_workers=workers, start_batch=k), 3)
    assert all(same(a, b) for a, b in zip(full[k:], resumed))
    assert not same(full[k], full[k + 1])


@pytest.mark.parametrize("streams", [1, 2, 4])
def test_the_batches_do_not_depend_on_the_worker_count(data, streams):
    """The data streams are the run's identity; the workers only share them out, so a run resumed
    with another num_workers reads the batches it would have read (issue 45)."""
    ref = take(load(cfg(data), data_streams=streams, num_workers=0), 7)
    for workers in (1, 2, 3):
        assert all(same(a, b) for a, b in zip(ref, take(load(cfg(data), data_streams=streams, num_workers=workers), 7)))
        resumed = take(load(cfg(data), data_streams=streams, num_workers=workers, start_batch=3), 4)
        assert all(same(a, b) for a, b in zip(ref[3:], resumed))
    if streams > 1:  # the streams do change the batches: they are identity, not a speed setting
        assert [b["key"] for b in ref] != [b["key"] for b in take(load(cfg(data)), 7)]


def test_deterministic_for_a_seed(data):
    a, b = take(load(cfg(data)), 3), take(load(cfg(data)), 3)
    assert all(same(x, y) for x, y in zip(a, b))
    c = take(load(cfg(data), seed=1), 3)
    assert [x["key"] for x in a] != [x["key"] for x in c]


def _shard_keys(data, shard_ids) -> set[str]:
    out, min_area = data
    shards = [str(out / "train" / f"shard-{i:06d}.tar") for i in shard_ids]
    return {r.key for r in iter_records(shards, min_box_area=min_area)}


@pytest.mark.parametrize("streams", [1, 2])
def test_ranks_and_streams_read_disjoint_shards(data, streams):
    # Shuffle buffer 1 keeps the epoch order: one epoch = 24 records per rank, 24/S per stream.
    batch_size = 6
    n_batches = 24 // batch_size
    keys = []
    for rank in (0, 1):
        loader = load(cfg(data), rank=rank, world_size=2, data_streams=streams, num_workers=streams, shuffle_buffer=1,
                      batch_size=batch_size)
        batches = take(loader, n_batches)
        keys.append({k for b in batches for k in b["key"]})
    assert not keys[0] & keys[1]
    assert keys[0] | keys[1] == _shard_keys(data, range(4))
    # Rank r's streams are g = r·S + s over shards[g::2S]: rank 0 gets shards 0,2 (S=1) or 0,1 (S=2).
    assert keys[0] == _shard_keys(data, [0, 2] if streams == 1 else [0, 1])


def test_too_few_shards_is_a_clear_error(data):
    with pytest.raises(BadDataError, match=r"4 shard\(s\) for 2 rank\(s\) × 3 data stream\(s\)"):
        load(cfg(data), world_size=2, data_streams=3)


def test_box_draw_is_seeded_uniform_and_without_augment_exact(data):
    out, min_area = data
    records = {r.key: r for r in iter_records(str(out / "train" / "*.tar"), min_box_area=min_area)}
    batches = take(load(cfg(data, augment=False)), 12)
    tf = eval_transform(S)
    drawn: dict[str, set[str]] = {}
    for batch in batches:
        for i, key in enumerate(batch["key"]):
            record = records[key]
            phrases = [r.phrase for r in record.regions]
            match = [p for p in phrases if torch.equal(tokenize(p, L)[0], batch["phrase"][i])]
            assert match, (key, phrases)
            region = record.regions[phrases.index(match[0])]
            image = Image.open(io.BytesIO(record.image_bytes)).convert("RGB")
            assert torch.equal(batch["crop"][i], tf(crop_region(image, region.box)))
            assert torch.equal(batch["image"][i], tf(image))  # hiershapes images are square already
            assert torch.equal(batch["text"][i], tokenize(record.caption, L)[0])
            drawn.setdefault(key, set()).add(match[0])
    # Over 12 steps (2 epochs) some sample with several boxes shows more than one of them.
    assert any(len(p) > 1 for p in drawn.values())
    again = take(load(cfg(data, augment=False)), 12)
    assert all(same(a, b) for a, b in zip(batches, again))


def test_augmentation_differs_between_image_and_crop_and_steps(data):
    (batch,) = take(load(cfg(data, augment=True)), 1)
    plain = take(load(cfg(data, augment=False)), 1)[0]
    assert batch["key"] == plain["key"]
    assert not torch.equal(batch["image"], plain["image"])


def _negatives(path: Path, keys: list[str], modes=("concrete",)) -> None:
    rows = []
    for mode in modes:
        for i, key in enumerate(keys):
            rows.append(dict(key=key, caption="c", negative=f"a negative {i} {mode}", operator="replace_noun", slot=1,
                             old_word="square", new_word="circle", c_old=4.5, c_new=4.6,
                             c_hat=None if i == 0 else (i % 5) / 5, mode=mode, seed=0))
    pl.DataFrame(rows).write_parquet(path)


def test_hard_negatives_attached_by_key(data, tmp_path):
    all_keys = sorted(_shard_keys(data, range(4)))
    with_neg = all_keys[::2]
    _negatives(tmp_path / "neg.parquet", with_neg)
    table = {k: (f"a negative {i} concrete", (i % 5) / 5) for i, k in enumerate(with_neg) if i != 0}  # row 0: null ĉ
    batches = take(load(cfg(data, negatives=str(tmp_path / "neg.parquet"))), 4)
    seen = 0
    for batch in batches:
        assert batch["hard_text"].shape == (B, L) and batch["hard_text"].dtype == torch.int64
        assert batch["hard_concreteness"].dtype == torch.float32 and batch["has_hard"].dtype == torch.bool
        for i, key in enumerate(batch["key"]):
            assert bool(batch["has_hard"][i]) == (key in table)
            if key in table:
                seen += 1
                assert torch.equal(batch["hard_text"][i], tokenize(table[key][0], L)[0])
                assert batch["hard_concreteness"][i].item() == pytest.approx(table[key][1])
    assert seen > 0
    _negatives(tmp_path / "two.parquet", with_neg, modes=("concrete", "random"))
    with pytest.raises(BadDataError, match="modes"):
        load(cfg(data, negatives=str(tmp_path / "two.parquet")))
    (batch,) = take(load(cfg(data, negatives=str(tmp_path / "two.parquet")), negatives_mode="random"), 1)
    key = next(k for k in batch["key"] if k in table)
    i = batch["key"].index(key)
    assert torch.equal(batch["hard_text"][i], tokenize(table[key][0].replace("concrete", "random"), L)[0])
    with pytest.raises(BadDataError, match="c_hat"):
        load(cfg(data, negatives=str(tmp_path / "neg.parquet"), bad_data="strict"))


def _corrupt_copy(data, tmp_path: Path, row: int, how: str) -> tuple[str, str]:
    """Copy the training shards; damage sample ``row`` of shard 0. Returns (pattern, damaged key)."""
    out, _ = data
    damaged_key = ""
    for shard in sorted((out / "train").glob("*.tar")):
        with tarfile.open(shard) as tar:
            members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
        samples: dict[str, dict[str, bytes]] = {}
        for name, payload in members:
            key, ext = name.split(".", 1)
            samples.setdefault(key, {})[ext] = payload
        keys = list(samples)
        damaged = keys[row]
        if shard.name == "shard-000000.tar":
            damaged_key = damaged
            if how == "truncated":
                samples[damaged]["jpg"] = samples[damaged]["jpg"][: len(samples[damaged]["jpg"]) * 2 // 3]
            else:
                samples[damaged]["json"] = b"{broken"
        with ShardWriter(tmp_path / shard.name) as writer:
            for key in keys:
                writer.write(key, samples[key])
    return str(tmp_path / "shard-*.tar"), damaged_key


@pytest.mark.parametrize("how", ["truncated", "malformed"])
def test_bad_sample_in_the_stream_is_skipped_and_resume_stays_exact(data, tmp_path, how):
    pattern, damaged = _corrupt_copy(data, tmp_path, row=3, how=how)
    assert damaged == "train-00000003"
    data_cfg = cfg(data, train_shards=pattern)
    batches = take(load(data_cfg, shuffle_buffer=1), 6)  # one epoch: 48 records
    keys = [k for b in batches for k in b["key"]]
    assert damaged not in keys
    sizes = [len(b["key"]) for b in batches]
    if how == "truncated":  # header reads, pixels do not: its batch is one shorter
        assert sorted(sizes) == [B - 1] + [B] * 5
    else:  # caught before batching: every batch is full
        assert sizes == [B] * 6
    resumed = take(load(data_cfg, shuffle_buffer=1, start_batch=2), 4)
    assert all(same(a, b) for a, b in zip(batches[2:], resumed))
    with pytest.raises(BadDataError, match=r"shard-000000.tar: row 3"):
        take(load(cfg(data, train_shards=pattern, bad_data="strict"), shuffle_buffer=1), 6)


def test_plain_shards_train_without_boxes(data, tmp_path):
    with ShardWriter(tmp_path / "plain-000000.tar") as writer:
        for i in range(5):
            buf = io.BytesIO()
            Image.new("RGB", (40, 30), (i * 40, 0, 0)).save(buf, "JPEG")
            writer.write(f"p{i}", {"jpg": buf.getvalue(), "txt": f"caption {i}".encode()})
    data_cfg = DataConfig(train_shards=str(tmp_path / "plain-*.tar"), format="plain")
    (batch,) = take(train_loader(data_cfg, batch_size=4, image_size=S, context_length=L, use_boxes=False, seed=0,
                                 shuffle_buffer=1), 1)
    assert batch["image"].shape == (4, 3, S, S) and set(batch) == {"image", "text", "key"}
    with pytest.raises(BadDataError, match="no boxes"):
        train_loader(data_cfg, batch_size=4, image_size=S, context_length=L, use_boxes=True, seed=0)


def test_eval_loaders_are_ordered(data):
    out, min_area = data
    paths = sorted((out / "classification").rglob("*.jpg"))
    batches = list(eval_image_loader(paths, image_size=S, batch_size=5))
    stacked = torch.cat(batches)
    assert stacked.shape == (len(paths), 3, S, S)
    assert torch.equal(stacked[7], eval_transform(S)(Image.open(paths[7]).convert("RGB")))
    squeezed = torch.cat(list(eval_image_loader(paths, image_size=S, batch_size=5, squeeze=True)))
    assert torch.equal(squeezed[2], squeeze_transform(S)(Image.open(paths[2]).convert("RGB")))
    val = list(grounded_eval_batches(str(out / "val" / "*.tar"), batch_size=4, image_size=S, context_length=L,
                                     min_box_area=min_area))
    assert [k for b in val for k in b["key"]] == [f"val-{i:08d}" for i in range(10)]
    assert [len(b["key"]) for b in val] == [4, 4, 2] and val[0]["crop"].shape == (4, 3, S, S)


def test_shuffle_buffer_larger_than_the_data_holds_one_epoch(data):
    # 48 samples, buffer 4000: the buffer stops filling after one epoch (instead of holding ~83
    # copies of every sample), i.e. it behaves exactly like a buffer of the epoch's size.
    big = take(load(cfg(data), shuffle_buffer=4000), 6)
    epoch_sized = take(load(cfg(data), shuffle_buffer=48), 6)
    assert all(same(a, b) for a, b in zip(big, epoch_sized))
    smaller = take(load(cfg(data), shuffle_buffer=47), 6)
    assert [b["key"] for b in big] != [b["key"] for b in smaller]
