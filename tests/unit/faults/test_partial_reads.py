"""Readers that know when they stopped early: a tar cut at a member boundary, an unbalanced CSV quote."""

from __future__ import annotations

import tarfile

import pytest

from argent.data.formats.hierarcaps import read_hierarcaps_expanded
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import ShardWriter, iter_shard
from tests.fixtures import OracleModel, write_karpathy

HEADER = "positive,negative,image_url\n"


def row(i: int) -> str:
    chain = "a thing => an animal => a dog => a small dog"
    return f"{chain},{chain.replace('dog', 'cat')},http://images.cocodataset.org/val2014/COCO_val2014_{i:012d}.jpg\n"


def shard_cut_at_a_member_boundary(folder, samples=6, keep=3):
    whole = folder / "whole.tar"
    with ShardWriter(whole) as writer:
        for i in range(samples):
            writer.write(f"s{i}", {"txt": b"a caption", "json": b"{}"})
    with tarfile.open(whole) as tar:
        cut = tar.getmembers()[2 * keep].offset
    cut_path = folder / "cut.tar"
    cut_path.write_bytes(whole.read_bytes()[:cut])
    return whole, cut_path


def test_tar_cut_at_a_member_boundary_is_detected(tmp_path):
    whole, cut = shard_cut_at_a_member_boundary(tmp_path)
    policy = BadDataPolicy("skip")
    assert len(list(iter_shard(whole, policy))) == 6 and not policy.counts
    assert len(list(iter_shard(cut, policy))) == 3
    assert policy.counts == {"truncated_shard": 1}
    with pytest.raises(BadDataError, match=rf"{cut}: ends after row 2 without the tar end-of-archive"):
        list(iter_shard(cut, BadDataPolicy("strict")))


def test_unbalanced_quote_is_one_bad_row_and_the_rest_is_read(tmp_path):
    rows = [row(i) for i in range(20)]
    rows[3] = '"' + rows[3]  # opens a quote that never closes
    path = tmp_path / "expanded.csv"
    path.write_text(HEADER + "".join(rows))
    policy = BadDataPolicy("skip")
    samples = read_hierarcaps_expanded(path, policy)
    assert policy.counts == {"unbalanced_quote": 1}
    assert len(samples) == 19  # not 3: the rows after the broken one are still read
    with pytest.raises(BadDataError, match=rf"{path}: row 4: a quote opens"):
        read_hierarcaps_expanded(path, BadDataPolicy("strict"))


def test_evaluation_from_fewer_items_says_partial(tmp_path, caplog):
    from argent.evaluation.benchmarks import parse_benchmark
    from argent.evaluation.runner import evaluate

    raw = {"protocol": "retrieval", "annotations": str(write_karpathy(tmp_path)), "image_dir": str(tmp_path / "img")}
    assert evaluate(OracleModel(), "r", parse_benchmark("r", raw))["partial"] is False
    raw["annotations"] = str(write_karpathy(tmp_path / "b", broken=True))
    raw["image_dir"] = str(tmp_path / "b" / "img")
    result = evaluate(OracleModel(), "r", parse_benchmark("r", raw))
    assert result["partial"] is True and sum(result["counts"]["skipped"].values()) == 1
    assert "PARTIAL result" in caplog.text
    with pytest.raises(BadDataError, match="9.jpg"):
        evaluate(OracleModel(), "r", parse_benchmark("r", {**raw, "bad_data": "strict"}))
