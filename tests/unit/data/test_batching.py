"""Shape-contrast batches (argent/data/batching.py): the generic key, groups of distinct captions
that differ only in their nouns, nothing dropped, bounded waiting, and the loader contract kept
(deterministic, exact resume, rank/worker splitting)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from argent.config import BatchingConfig, ConfigError, DataConfig, from_dict
from argent.data.batching import GroupedBatcher, generic_key, record_batches
from argent.data.formats.grounded import GroundedRecord, Region, iter_records
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.loaders import train_loader

SHAPES = ["circle", "square", "triangle", "heart", "star", "cross"]
BOX = (0, 0, 8, 8)


def test_generic_key_masks_the_head_noun_of_each_grounded_phrase():
    one = "a small outlined red square"
    assert generic_key(one, [one]) == "a small outlined red _"
    two = "a large solid blue circle left of a small outlined red square"
    phrases = ["a large solid blue circle", "a small outlined red square", two]  # + the referring expression
    assert generic_key(two, phrases) == "a large solid blue _ left of a small outlined red _"
    # Same attributes, other shapes: same key; other attributes: another key.
    assert generic_key("a small outlined red star", ["a small outlined red star"]) == generic_key(one, [one])
    assert generic_key("a small solid red square", ["a small solid red square"]) != generic_key(one, [one])
    # A phrase not in the caption masks nothing; words are matched whole, case and spacing folded.
    assert generic_key("A  red squares", ["a red square"]) == "a red squares"
    assert generic_key("a dog on a red mat", ["a dog", "a red mat"]) == "a _ on a red _"


def _records(n: int, seed: int, attrs: list[str], two_object_share: float = 0.0) -> list[GroundedRecord]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        attr = attrs[rng.integers(len(attrs))]
        shape = SHAPES[rng.integers(len(SHAPES))]
        first = f"a {attr} {shape}"
        if rng.random() < two_object_share:
            second = f"a {attrs[rng.integers(len(attrs))]} {SHAPES[rng.integers(len(SHAPES))]}"
            caption = f"{first} above {second}"
            regions = (Region(first, BOX), Region(second, BOX), Region(caption, BOX))
        else:
            caption, regions = first, (Region(first, BOX),)
        out.append(GroundedRecord(key=f"r{i:05d}", where=f"test:{i}", caption=caption, image_bytes=b"",
                                  width=8, height=8, regions=regions))
    return out


def _key(record: GroundedRecord) -> str:
    return generic_key(record.caption, [r.phrase for r in record.regions])


def test_batches_are_groups_of_distinct_captions_that_differ_only_in_the_noun():
    records = _records(2000, 0, [f"{size}{colour}" for size in ("", "small ") for colour in ("red", "blue", "green", "pink")])
    cfg = BatchingConfig(mode="grouped", group_size=6, pool_batches=16, max_wait=32)
    batches = list(GroupedBatcher(24, cfg).batches(iter(records)))
    full = distinct = 0
    for batch in batches[:40]:  # before the flush at the end of the finite stream
        assert len(batch) == 24
        groups = Counter(_key(r) for r in batch)
        full += sum(n == 6 for n in groups.values())
        # A caption repeats only in a fill-up slot that no pooled caption outside the batch can take.
        distinct += len({r.caption for r in batch}) == len(batch)
    # 8 keys of 6 shapes, ~48 records per key in the pool: most groups are full (measured 85 %),
    # nearly every batch holds distinct captions only (measured 95 %).
    assert full >= 0.7 * 40 * 4, full
    assert distinct >= 0.85 * 40, distinct
    # The plain stream, for contrast, mixes attributes: few records share a key with five others.
    plain = next(record_batches(iter(records), 24, BatchingConfig()))
    assert plain == records[:24]
    assert max(Counter(_key(r) for r in plain).values()) < 12


@pytest.mark.parametrize("two_object_share", [0.0, 0.5])
def test_nothing_is_dropped_and_nothing_waits_past_max_wait(two_object_share):
    records = _records(1500, 1, ["red", "blue", "green"], two_object_share)
    cfg = BatchingConfig(mode="grouped", group_size=6, pool_batches=4, max_wait=5)
    batcher = GroupedBatcher(16, cfg)
    position = {r.key: i for i, r in enumerate(records)}
    consumed = iter(records)
    seen: list[str] = []
    for b, batch in enumerate(batcher.batches(consumed)):
        for record in batch:
            # Record i entered the pool by batch max(0, i // 16 - pool_batches) at the latest... and
            # leaves within max_wait batches of entering, plus the batches that the initial pool's
            # due records need (pool_batches).
            arrival = max(0, position[record.key] // 16 - cfg.pool_batches)
            assert b <= arrival + cfg.max_wait + cfg.pool_batches + 1, (b, position[record.key])
        seen += [r.key for r in batch]
        assert len(batch) == 16 or b == len(records) // 16  # only the flushed tail is short
    assert sorted(seen) == sorted(r.key for r in records)  # every record exactly once


def test_unmatched_records_still_train_in_a_mixed_fill_up():
    # Every caption unique and no two share a key: no group can form, all leave as fill-up.
    records = [GroundedRecord(f"k{i}", "t", f"a thing number {i} here", b"", 8, 8, (Region(f"a thing number {i} here", BOX),))
               for i in range(100)]
    batches = list(GroupedBatcher(10, BatchingConfig(mode="grouped", group_size=4, pool_batches=2)).batches(iter(records)))
    assert [len(b) for b in batches] == [10] * 10
    assert [r.key for b in batches for r in b] == [r.key for r in records]  # oldest first


def test_batching_config_is_checked():
    with pytest.raises(ConfigError, match="data.batching.group_size"):
        from_dict(DataConfig, {"batching": {"mode": "grouped", "group_size": 1}}, "data")
    with pytest.raises(ConfigError, match="data.batching.mode"):
        from_dict(DataConfig, {"batching": {"mode": "clustered"}}, "data")
    assert from_dict(DataConfig, {}, "data").batching.mode == "stream"  # the published batches by default


# ---- through the training loader ----------------------------------------------------------------

@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    params = HiershapesParams(seed=2, train_scenes=96, val_scenes=0, test_scenes=0, per_class=0, shard_size=24,
                              colours=["red.n.01"], fills=["solid"], sizes={"large": [0.4, 0.5]}, max_objects=2,
                              count_weights=[3, 1])
    manifest = generate(params, out)
    return out, manifest["min_box_area"]


def _load(data, **kw):
    out, min_area = data
    data_cfg = DataConfig(train_shards=str(out / "train" / "shard-*.tar"), min_box_area=min_area,
                          batching=BatchingConfig(mode="grouped", group_size=6, pool_batches=2, max_wait=4))
    args = dict(batch_size=12, image_size=32, context_length=24, use_boxes=True, seed=0, shuffle_buffer=16)
    args.update(kw)
    return train_loader(data_cfg, **args)


def _take(loader, n):
    return list(itertools.islice(iter(loader), n))


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k] for k in a)


@pytest.mark.parametrize("workers,k", [(0, 3), (2, 3)])
def test_grouped_loader_resumes_exactly_and_is_seeded(data, workers, k):
    full = _take(_load(data, data_streams=max(1, workers), num_workers=workers), k + 3)
    resumed = _take(_load(data, data_streams=max(1, workers), num_workers=workers, start_batch=k), 3)
    assert all(_same(a, b) for a, b in zip(full[k:], resumed))
    again = _take(_load(data, data_streams=max(1, workers), num_workers=workers), 2)
    assert all(_same(a, b) for a, b in zip(full, again))
    other = _take(_load(data, data_streams=max(1, workers), num_workers=workers, seed=1), 2)
    assert [b["key"] for b in other] != [b["key"] for b in full[:2]]


def test_grouped_loader_groups_captions_and_splits_ranks(data):
    out, min_area = data
    captions = {r.key: r.caption for r in iter_records(str(out / "train" / "shard-*.tar"), min_box_area=min_area)}
    (batch,) = _take(_load(data), 1)
    # One colour, fill and size: a one-object key holds all 12 shapes, so the first group is 6 distinct shapes.
    first = [captions[k] for k in batch["key"][:6]]
    assert len(set(first)) == 6 and len({c.rsplit(" ", 1)[0] for c in first}) == 1, first
    keys = [{k for b in _take(_load(data, rank=rank, world_size=2), 3) for k in b["key"]} for rank in (0, 1)]
    assert not keys[0] & keys[1]
