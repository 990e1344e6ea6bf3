"""Fail fast: `argent check` and the DAG stop on missing required data before anything expensive runs;
optional data is skipped with one line."""

from __future__ import annotations

from argent.data.shards import ShardWriter
from tests.fixtures import config_with


def test_missing_required_benchmark_names_key_and_path(tmp_path, argent):
    missing = tmp_path / "nowhere" / "val"
    config = config_with(tmp_path, {"inet": {"protocol": "zeroshot", "root": str(missing),
                                             "taxonomy": str(tmp_path / "t.txt")}})
    code, err = argent("check", "--config", config)
    assert code == 2 and f"benchmarks.inet.root: {missing}: not found" in err and "optional: true" in err


def test_missing_optional_benchmark_is_one_line(tmp_path, argent, capsys):
    config = config_with(tmp_path, {"inet": {"protocol": "zeroshot", "optional": True,
                                             "root": str(tmp_path / "nowhere"), "taxonomy": str(tmp_path / "t")}})
    code, err = argent("check", "--config", config)
    assert code == 0
    assert "skipped (optional, data absent): benchmarks.inet.root" in err


def test_unreadable_training_shards_fail_the_preflight(tmp_path, argent):
    shard = tmp_path / "shards" / "s-0.tar"
    with ShardWriter(shard) as writer:
        writer.write("a", {"txt": b"no image here"})
    shard.write_bytes(shard.read_bytes()[:700])  # torn inside the first member
    config = config_with(tmp_path, {}, data={"train_shards": str(tmp_path / "shards" / "s-*.tar")})
    code, err = argent("check", "--config", config)
    assert code == 2 and "data.train_shards" in err and "Traceback" not in err
