"""A shard missing from, or short against, its data set's manifest (hiershapes' manifest.json lists
samples and shards per split) is found before training: strict mode names the manifest, the split,
expected against found and the fix; skip mode trains on what is there and counts the difference;
`argent check` reports it first."""

from __future__ import annotations

import json
import shutil
import tarfile
from collections import Counter

import polars as pl
import pytest

from argent.config import DataConfig
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.loaders import train_loader
from argent.data.manifest import count_samples, manifest_check
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import expand_shards, has_end_marker, iter_shard
from tests.fixtures import checksums, config_with, shorten

SHARD_SIZE, TRAIN = 4, 12  # three train shards of four samples


@pytest.fixture(scope="module")
def _dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    generate(HiershapesParams(train_scenes=TRAIN, val_scenes=4, test_scenes=4, per_class=1, shard_size=SHARD_SIZE,
                              image_size=32, supersample=1), out, jobs=1)
    return out


@pytest.fixture
def dataset(_dataset, tmp_path):
    """A private copy of a small synthesised hiershapes (3 train shards of 4 samples)."""
    return shutil.copytree(_dataset, tmp_path / "hiershapes")


def loader(pattern, bad_data="skip"):
    cfg = DataConfig(train_shards=str(pattern), bad_data=bad_data, min_box_area=1, augment=False)
    return train_loader(cfg, batch_size=2, image_size=16, context_length=16, use_boxes=False, seed=0, shuffle_buffer=1)


def counts_after_one_batch(pattern) -> dict[str, int]:
    batches = iter(loader(pattern))
    next(batches)
    return batches.totals()["skipped"]


def cut_at_member_boundary(shard, keep: int) -> None:
    with tarfile.open(shard) as tar:
        cut = tar.getmembers()[2 * keep].offset  # two members (jpg, json) per sample
    shard.write_bytes(shard.read_bytes()[:cut])


def test_an_intact_data_set_matches_its_manifest(dataset):
    pattern = dataset / "train" / "shard-*.tar"
    check = manifest_check(str(pattern), expand_shards(str(pattern)))
    assert check is not None and not check.differences and check.split == "train"
    assert sum(check.found.values()) == TRAIN == json.loads((dataset / "manifest.json").read_text())["counts"]["train"]
    assert counts_after_one_batch(pattern) == {}


def test_missing_shard_is_an_error_in_strict_mode_and_counted_in_skip_mode(dataset):
    (dataset / "train" / "shard-000001.tar").unlink()
    pattern = dataset / "train" / "shard-*.tar"  # the glob still matches the two left: nothing else would notice
    with pytest.raises(BadDataError) as err:
        loader(pattern, bad_data="strict")
    message = str(err.value)
    assert f"{dataset / 'manifest.json'}: split 'train'" in message
    assert "12 samples in 3 shard(s) listed" in message and "8 samples in 2 shard(s) found" in message
    assert "shard-000001.tar: missing (4 samples listed)" in message and "argent synth" in message
    assert counts_after_one_batch(pattern) == {"missing_shard": 1}


def test_a_whole_but_short_shard_is_found_only_through_the_manifest(dataset):
    shard = dataset / "train" / "shard-000002.tar"
    shorten(shard, keep=1)
    assert has_end_marker(shard) and count_samples(shard) == 1  # a well-formed tar: the reader sees nothing wrong
    pattern = dataset / "train" / "shard-*.tar"
    with pytest.raises(BadDataError, match=r"shard-000002.tar: 1 samples, 4 listed"):
        loader(pattern, bad_data="strict")
    assert counts_after_one_batch(pattern) == {"count_mismatch": 1}


def test_a_shard_cut_at_a_member_boundary_is_short_against_the_manifest(dataset):
    cut_at_member_boundary(dataset / "train" / "shard-000000.tar", keep=2)
    with pytest.raises(BadDataError, match=r"shard-000000.tar: 2 samples, 4 listed"):
        loader(dataset / "train" / "shard-*.tar", bad_data="strict")


def test_only_the_shards_the_pattern_names_are_compared(dataset):
    (dataset / "train" / "shard-000001.tar").unlink()
    subset = dataset / "train" / "shard-00000{0,2}.tar"  # a deliberate subset, without the deleted shard
    assert manifest_check(str(subset), expand_shards(str(subset))).differences == []
    named = dataset / "train" / "shard-00000{0..2}.tar"  # names the deleted shard: expand_shards drops it silently
    with pytest.raises(BadDataError, match="shard-000001.tar: missing"):
        loader(named, bad_data="strict")


def test_preflight_reports_a_short_data_set(dataset, tmp_path, argent):
    shorten(dataset / "train" / "shard-000002.tar", keep=3)
    data = {"train_shards": str(dataset / "train" / "shard-*.tar"), "min_box_area": 1}
    marker = tmp_path / "preflight.json"
    before = checksums(dataset)

    code, err = argent("check", "--config", config_with(tmp_path, {}, data={**data, "bad_data": "strict"}),
                       "--out", marker)
    assert code == 2 and "Traceback" not in err
    assert "data.train_shards" in err and str(dataset / "manifest.json") in err and "split 'train'" in err
    assert "shard-000002.tar: 3 samples, 4 listed" in err and "argent synth" in err
    assert not marker.exists()

    code, err = argent("check", "--config", config_with(tmp_path, {}, data=data), "--out", marker)
    assert code == 0 and "warning (bad_data: skip, training counts it): data.train_shards" in err
    assert "shard-000002.tar: 3 samples, 4 listed" in err

    # the workflow's own data folder (made by its synth rule) is checked too once it exists
    code, err = argent("check", "--config", config_with(tmp_path, {}, data={**data, "bad_data": "strict"},
                                                        hiershapes={"out": str(dataset)}))
    assert code == 2 and "shard-000002.tar: 3 samples, 4 listed" in err
    assert checksums(dataset) == before  # the preflight reads, never writes


def hard_negatives(path, keys, empty: int) -> str:
    """A mined table (argent mine's columns) for ``keys``; the first ``empty`` rows have a blank negative."""
    rows = [{"key": k, "negative": "" if i < empty else f"a negative {i}", "c_hat": 0.5, "mode": "concrete"}
            for i, k in enumerate(keys)]
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def test_counts_made_once_are_not_multiplied_by_the_world_size(dataset, tmp_path):
    """The manifest's differences and the hard-negative table's bad rows are seen alike by every rank;
    only rank 0 keeps them, so the sum over ranks (what ``skip_counts`` all-gathers) counts each once."""
    (dataset / "train" / "shard-000002.tar").unlink()  # two shards left: one per rank
    pattern = str(dataset / "train" / "shard-*.tar")
    keys = sorted({s["__key__"] for shard in expand_shards(pattern) for s in iter_shard(shard, BadDataPolicy("strict"))})
    cfg = DataConfig(train_shards=pattern, bad_data="skip", min_box_area=1, augment=False,
                     negatives=hard_negatives(tmp_path / "neg.parquet", keys, empty=2))

    def counts(rank: int, world_size: int) -> Counter:
        batches = iter(train_loader(cfg, batch_size=2, image_size=16, context_length=16, use_boxes=False, seed=0,
                                    rank=rank, world_size=world_size, shuffle_buffer=1))
        next(batches)  # the stream's own counts join in; a clean shard adds none
        return Counter(batches.totals()["skipped"])

    once = {"missing_shard": 1, "empty_negative": 2}
    assert counts(0, 1) == once
    assert counts(0, 2) == once and counts(1, 2) == {}
    assert counts(0, 2) + counts(1, 2) == once  # not {"missing_shard": 2, "empty_negative": 4}
