"""Evaluation sets read from shards (hiershapes' val split, as ``hs_analysis`` reads it) are compared
with their data set's manifest before reading, as the training shards are: a missing or short val
shard is a strict error naming the manifest, the split, expected against found; in skip mode it is
counted under the same reasons and the evaluation JSON says ``partial: true``."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import yaml

from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.loaders import grounded_eval_batches
from argent.data.policy import BadDataError, BadDataPolicy

from .conftest import checksums
from .test_manifest_counts import shorten

SHARD_SIZE, VAL = 4, 8  # two val shards of four samples


@pytest.fixture(scope="module")
def _dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("hs_val") / "hiershapes"
    generate(HiershapesParams(train_scenes=4, val_scenes=VAL, test_scenes=4, per_class=1, shard_size=SHARD_SIZE,
                              image_size=32, supersample=1), out, jobs=1)
    return out


@pytest.fixture
def dataset(_dataset, tmp_path):
    """A private copy of a small synthesised hiershapes (2 val shards of 4 samples)."""
    return shutil.copytree(_dataset, tmp_path / "hiershapes")


def eval_keys(pattern, policy: BadDataPolicy) -> list[str]:
    batches = grounded_eval_batches(str(pattern), batch_size=3, image_size=16, context_length=16, min_box_area=1,
                                    policy=policy)
    return [k for b in batches for k in b["key"]]


def test_an_intact_val_split_reads_whole_and_counts_nothing(dataset):
    policy = BadDataPolicy("strict")
    assert len(eval_keys(dataset / "val" / "shard-*.tar", policy)) == VAL
    assert policy.counts == {}


def test_missing_val_shard_is_an_error_in_strict_mode_and_counted_in_skip_mode(dataset):
    (dataset / "val" / "shard-000001.tar").unlink()
    pattern = dataset / "val" / "shard-*.tar"  # the glob still matches the shard left
    with pytest.raises(BadDataError) as err:
        eval_keys(pattern, BadDataPolicy("strict"))
    message = str(err.value)
    assert f"{dataset / 'manifest.json'}: split 'val'" in message
    assert "8 samples in 2 shard(s) listed" in message and "4 samples in 1 shard(s) found" in message
    assert "shard-000001.tar: missing (4 samples listed)" in message and "argent synth" in message
    policy = BadDataPolicy("skip")
    assert len(eval_keys(pattern, policy)) == SHARD_SIZE
    assert policy.counts == {"missing_shard": 1}  # once per call, not per batch


def test_short_val_shard_is_found_before_the_first_batch(dataset):
    shorten(dataset / "val" / "shard-000000.tar", keep=1)  # a whole tar: nothing but the manifest tells
    with pytest.raises(BadDataError, match=r"split 'val'.*shard-000000.tar: 1 samples, 4 listed"):
        next(grounded_eval_batches(str(dataset / "val" / "shard-*.tar"), batch_size=1, image_size=16,
                                   context_length=16, min_box_area=1, policy=BadDataPolicy("strict")))
    policy = BadDataPolicy("skip")
    assert len(eval_keys(dataset / "val" / "shard-*.tar", policy)) == 1 + SHARD_SIZE
    assert policy.counts == {"count_mismatch": 1}


def test_the_only_named_val_shard_missing_still_names_the_manifest(dataset):
    """config.yaml's hs_analysis names one file, ``val/shard-000000.tar``: when it is gone, the error
    says which data set lists it (before: only "no shard file matches")."""
    shutil.rmtree(dataset / "val")
    (dataset / "val").mkdir()
    with pytest.raises(BadDataError, match=r"split 'val'.*4 samples in 1 shard\(s\) listed.*"
                                           r"shard-000000.tar: missing \(4 samples listed\)"):
        eval_keys(dataset / "val" / "shard-000000.tar", BadDataPolicy("strict"))


def analysis_config(tmp_path, dataset, **extra):
    config = tmp_path / "bench.yaml"
    entry = {"protocol": "analysis", "shards": str(dataset / "val" / "shard-*.tar"), "min_box_area": 1,
             "max_points": 20, **extra}
    config.write_text(yaml.safe_dump({"benchmarks": {"hs_analysis": entry}}))
    return config


def test_evaluate_on_a_short_val_split(finished_run, dataset, tmp_path, argent, caplog):
    """``argent evaluate`` with an hs_analysis-like entry: skip mode writes the result with the
    difference counted and ``partial: true``; strict mode stops with one message and leaves the
    earlier result as it was."""
    out = tmp_path / "eval" / "hs_analysis.json"
    run = ["--run", finished_run, "--benchmark", "hs_analysis", "--out", out, "--threads", "1"]
    code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, dataset))
    assert code == 0, err
    whole = json.loads(out.read_text())
    assert whole["partial"] is False and whole["counts"]["skipped"] == {} and whole["counts"]["n_items"] == VAL

    shorten(dataset / "val" / "shard-000001.tar", keep=1)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, dataset))
    assert code == 0, err
    short = json.loads(out.read_text())
    assert short["partial"] is True and short["counts"]["skipped"] == {"count_mismatch": 1}
    assert short["counts"]["n_items"] == SHARD_SIZE + 1
    assert "PARTIAL result" in caplog.text and "shard-000001.tar: 1 samples, 4 listed" in caplog.text

    before = checksums(out.parent)
    code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, dataset, bad_data="strict"))
    assert code == 2 and "Traceback" not in err
    assert str(dataset / "manifest.json") in err and "split 'val'" in err
    assert "8 samples in 2 shard(s) listed" in err and "5 samples in 2 shard(s) found" in err
    assert "shard-000001.tar: 1 samples, 4 listed" in err and "argent synth" in err
    assert checksums(out.parent) == before  # the skip-mode result is kept as it was
