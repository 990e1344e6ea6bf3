"""Skipped samples are counted by reason in the training run's summary.json (and in MLflow).

Shards are built here with one bad sample per reason the training reader counts, so every count
is known in advance.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import polars as pl
import pytest
import torch

from argent.config import DataConfig, experiment_from_dict
from argent.data.loaders import train_loader
from argent.data.policy import skip_counts
from argent.data.shards import ShardWriter
from argent.engine.trainer import train
from tests.fixtures import ROOT, SCRIPTS, TINY, bad_shard, jpeg


def without_end_marker(path: Path) -> Path:
    """The same shard cut at its last member boundary (the tar end-of-archive blocks missing)."""
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    end = members[-1].offset_data + -(-members[-1].size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
    path.write_bytes(path.read_bytes()[:end])
    return path


def test_training_summary_counts_every_skipped_sample_by_reason(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    bad_shard(shards / "shard-000000.tar")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # One step of 4 samples; a shuffle buffer of one record reads one sample ahead, so the stream
    # reads the three raw-stage bad rows, then the batch [cut_pixels, good0, good1, good2].
    cfg = {**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4, "checkpoint_every": 1, "shuffle_buffer": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain", "augment": False},
           "tracking": {"enabled": True, "uri": uri, "experiment": "skip-counts"}}
    exp = experiment_from_dict(cfg, "meru", "tiny", 0, base_dir=ROOT)
    torch.set_num_threads(1)
    summary = train(exp, tmp_path / "run")
    expected = {"corrupt_image": 1, "empty_caption": 1, "malformed_text": 1, "missing_image": 1}
    assert summary["skipped_samples"] == expected and summary["dropped_samples"] == {}
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["skipped_samples"] == expected and written["dropped_samples"] == {}

    mlflow = pytest.importorskip("mlflow")
    client = mlflow.MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("skip-counts").experiment_id])
    assert {k: v for k, v in run.data.metrics.items() if k.startswith("skipped_samples/")} == {
        f"skipped_samples/{reason}": float(n) for reason, n in expected.items()}


def test_a_clean_run_says_zero_skipped(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    with ShardWriter(shards / "shard-000000.tar") as writer:
        for i in range(4):
            writer.write(f"good{i}", {"txt": f"shape number {i}".encode(), "jpg": jpeg(i)})
    cfg = {**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4, "checkpoint_every": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain"}}
    torch.set_num_threads(1)
    summary = train(experiment_from_dict(cfg, "meru", "tiny", 0, base_dir=ROOT), tmp_path / "run")
    assert summary["skipped_samples"] == {} and summary["dropped_samples"] == {}


def test_counts_are_summed_over_loader_workers_and_passes(tmp_path):
    """Two worker processes, one shard each (one without its end-of-archive blocks); every pass over
    a shard counts its bad samples again, and the batches carry the counts out of the workers."""
    bad_shard(tmp_path / "shard-000000.tar", good=4)
    without_end_marker(bad_shard(tmp_path / "shard-000001.tar", good=4))
    data_cfg = DataConfig(train_shards=str(tmp_path / "shard-*.tar"), format="plain", augment=False)
    loader = train_loader(data_cfg, batch_size=5, image_size=16, context_length=16, use_boxes=False, seed=0,
                          data_streams=2, num_workers=2, shuffle_buffer=1)
    batches = iter(loader)
    # Each worker's stream: 5 raw records per pass (cut_pixels + 4 good), read one ahead. Its first
    # three batches (batch b is worker b mod 2's) take 15 records: passes 1-3, and the first record
    # of pass 4 is read ahead, which re-reads the three raw-stage bad rows before it.
    seen = list(itertools.islice(batches, 6))
    assert all("_bad_data" not in b for b in seen)
    counts = skip_counts(batches)
    per_stream_passes = 4  # raw-stage reasons: counted once per pass started
    assert counts["skipped_samples"] == {
        "corrupt_image": 2 * 3,  # decoded in every batch: one cut image per pass, three passes per worker
        "empty_caption": 2 * per_stream_passes,
        "malformed_text": 2 * per_stream_passes,
        "missing_image": 2 * per_stream_passes,
        "truncated_shard": 3,  # the cut shard's end, reached at the end of each full pass
    }


def test_counts_are_summed_over_ranks(tmp_path):
    """Two gloo ranks, one shard each (rank 1's without its end-of-archive blocks), one batch each:
    every rank gets the sum (skip_counts is a collective under torch.distributed)."""
    bad_shard(tmp_path / "shard-000000.tar", good=4)
    without_end_marker(bad_shard(tmp_path / "shard-000001.tar", good=4))
    out = tmp_path / "counts.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(SCRIPTS / "skip_counts_ddp.py"), str(tmp_path / "shard-*.tar"), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Per rank, one batch of 5 records (a whole pass) plus one record read ahead: two passes started
    # (raw-stage reasons twice), one cut image decoded, rank 1's cut shard ended once.
    assert json.loads(out.read_text())["skipped_samples"] == {
        "corrupt_image": 2, "empty_caption": 4, "malformed_text": 4, "missing_image": 4, "truncated_shard": 1}


def test_a_batch_source_that_does_not_count_gives_none():
    assert skip_counts(iter([{"image": torch.zeros(1)}])) is None


@pytest.mark.parametrize("augment", [False, True])
def test_a_cached_set_replayed_from_memory_counts_and_batches_as_a_fresh_read(tmp_path, augment):
    """With an image cache the loader parses each shard once and replays it (and, without augmentation,
    keeps the resized pixels): over several passes the batches and the counts after every batch equal
    those of a loader that reads and decodes everything each pass."""
    from argent.data.image_cache import build

    bad_shard(tmp_path / "shard-000000.tar", good=6)
    without_end_marker(bad_shard(tmp_path / "shard-000001.tar", good=5))
    cache = tmp_path / "cache"
    build(str(tmp_path / "shard-*.tar"), cache)

    def run(image_cache: str) -> list[tuple[dict, dict]]:
        data_cfg = DataConfig(train_shards=str(tmp_path / "shard-*.tar"), format="plain", augment=augment,
                              image_cache=image_cache)
        batches = iter(train_loader(data_cfg, batch_size=4, image_size=16, context_length=16, use_boxes=False,
                                    seed=0, shuffle_buffer=4))
        return [(next(batches), skip_counts(batches)) for _ in range(14)]  # 56 records: over 4 passes of 13

    fresh, replayed = run(""), run(str(cache))
    assert fresh[-1][1]["skipped_samples"]["empty_caption"] >= 4, "the stream went through several passes"
    for (a, counts_a), (b, counts_b) in zip(fresh, replayed, strict=True):
        assert counts_a == counts_b
        assert a["key"] == b["key"] and torch.equal(a["image"], b["image"]) and torch.equal(a["text"], b["text"])


def half_covered_run(tmp_path: Path):
    """A 1-step run of 4 samples whose negatives parquet covers 2 of their keys."""
    shards = tmp_path / "shards"
    shards.mkdir()
    with ShardWriter(shards / "shard-000000.tar") as writer:
        for i in range(4):
            writer.write(f"good{i}", {"txt": f"a red square number {i}".encode(), "jpg": jpeg(i)})
    parquet = tmp_path / "negatives.parquet"
    pl.DataFrame({"key": ["good0", "good1"], "negative": ["a blue square", "a red circle"],
                  "c_hat": [0.9, 0.8], "mode": ["random", "random"]}).write_parquet(parquet)
    (tmp_path / "negatives.summary.json").write_text(json.dumps(
        {"captions": 2, "empty_captions": 0, "modes": {"random": {"negatives": 2}}}))
    cfg = {**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4, "checkpoint_every": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain", "negatives": str(parquet)}}
    return experiment_from_dict(cfg, "meru", "tiny", 0, base_dir=ROOT, variant_overrides={"hard_negatives": "random"})


def test_samples_without_a_hard_negative_are_counted_and_named(tmp_path, caplog):
    """A negatives parquet that covers only part of the training keys (mined from other shards, or
    cut short) trains the rest without a hard negative: counted in summary.json and said in one line,
    beside the share the miner itself found none for."""
    torch.set_num_threads(1)
    with caplog.at_level("WARNING", logger="argent.train"):
        summary = train(half_covered_run(tmp_path), tmp_path / "run")
    assert summary["dropped_samples"] == {"no_hard_negative": 2} and summary["skipped_samples"] == {}
    assert "2 of the 4 samples trained on (50.0 %) had no hard negative" in caplog.text
    assert "the miner found none for 0.0 % of the captions it read" in caplog.text


def test_a_same_config_rerun_of_a_finished_run_keeps_its_summary(tmp_path):
    """Re-running a finished run with its own config (`argent train` by hand; Snakemake would not) does
    nothing: its summary, with the counts of the passes that trained it, stays byte for byte."""
    torch.set_num_threads(1)
    exp = half_covered_run(tmp_path)
    train(exp, tmp_path / "run")
    before = (tmp_path / "run" / "summary.json").read_bytes()
    again = train(exp, tmp_path / "run", resume="auto")
    assert again["dropped_samples"] == {"no_hard_negative": 2}
    assert (tmp_path / "run" / "summary.json").read_bytes() == before
