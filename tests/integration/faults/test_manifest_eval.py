"""Evaluation sets read from shards (hiershapes' val split, as ``hs_analysis`` reads it) are compared
with their data set's manifest before reading, as the training shards are: a missing or short val
shard is a strict error naming the manifest, the split, expected against found; in skip mode it is
counted under the same reasons and the evaluation JSON says ``partial: true``."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from argent.data.eval_loaders import grounded_eval_batches
from argent.data.policy import BadDataError, BadDataPolicy
from tests.fixtures import analysis_config, checksums, shorten

SHARD_SIZE, VAL = 4, 8  # two val shards of four samples (tests.fixtures.small_val_set)


def eval_keys(pattern, policy: BadDataPolicy) -> list[str]:
    batches = grounded_eval_batches(str(pattern), batch_size=3, image_size=16, context_length=16, min_box_area=1,
                                    policy=policy)
    return [k for b in batches for k in b["key"]]


def test_an_intact_val_split_reads_whole_and_counts_nothing(val_dataset):
    policy = BadDataPolicy("strict")
    assert len(eval_keys(val_dataset / "val" / "shard-*.tar", policy)) == VAL
    assert policy.counts == {}


def test_missing_val_shard_is_an_error_in_strict_mode_and_counted_in_skip_mode(val_dataset):
    (val_dataset / "val" / "shard-000001.tar").unlink()
    pattern = val_dataset / "val" / "shard-*.tar"  # the glob still matches the shard left
    with pytest.raises(BadDataError) as err:
        eval_keys(pattern, BadDataPolicy("strict"))
    message = str(err.value)
    assert f"{val_dataset / 'manifest.json'}: split 'val'" in message
    assert "8 samples in 2 shard(s) listed" in message and "4 samples in 1 shard(s) found" in message
    assert "shard-000001.tar: missing (4 samples listed)" in message and "argent synth" in message
    policy = BadDataPolicy("skip")
    assert len(eval_keys(pattern, policy)) == SHARD_SIZE
    assert policy.counts == {"missing_shard": 1}  # once per call, not per batch


def test_short_val_shard_is_found_before_the_first_batch(val_dataset):
    shorten(val_dataset / "val" / "shard-000000.tar", keep=1)  # a whole tar: nothing but the manifest tells
    with pytest.raises(BadDataError, match=r"split 'val'.*shard-000000.tar: 1 samples, 4 listed"):
        next(grounded_eval_batches(str(val_dataset / "val" / "shard-*.tar"), batch_size=1, image_size=16,
                                   context_length=16, min_box_area=1, policy=BadDataPolicy("strict")))
    policy = BadDataPolicy("skip")
    assert len(eval_keys(val_dataset / "val" / "shard-*.tar", policy)) == 1 + SHARD_SIZE
    assert policy.counts == {"count_mismatch": 1}


def test_the_only_named_val_shard_missing_still_names_the_manifest(val_dataset):
    """config.yaml's hs_analysis names one file, ``val/shard-000000.tar``: when it is gone, the error
    says which data set lists it (before: only "no shard file matches")."""
    shutil.rmtree(val_dataset / "val")
    (val_dataset / "val").mkdir()
    with pytest.raises(BadDataError, match=r"split 'val'.*4 samples in 1 shard\(s\) listed.*"
                                           r"shard-000000.tar: missing \(4 samples listed\)"):
        eval_keys(val_dataset / "val" / "shard-000000.tar", BadDataPolicy("strict"))


def test_evaluate_on_a_short_val_split(finished_run, val_dataset, tmp_path, argent, caplog):
    """``argent evaluate`` with an hs_analysis-like entry: skip mode writes the result with the
    difference counted and ``partial: true``; strict mode stops with one message and leaves the
    earlier result as it was."""
    out = tmp_path / "eval" / "hs_analysis.json"
    # a benchmarks file of its own (the default's hs_analysis would lend its HierarCaps paths): read alone
    run = ["--run", finished_run, "--benchmark", "hs_analysis", "--out", out, "--threads", "1", "--no-default"]
    code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, val_dataset))
    assert code == 0, err
    whole = json.loads(out.read_text())
    assert whole["partial"] is False and whole["counts"]["skipped"] == {} and whole["counts"]["n_items"] == VAL

    shorten(val_dataset / "val" / "shard-000001.tar", keep=1)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, val_dataset))
    assert code == 0, err
    short = json.loads(out.read_text())
    assert short["partial"] is True and short["counts"]["skipped"] == {"count_mismatch": 1}
    assert short["counts"]["n_items"] == SHARD_SIZE + 1
    assert "PARTIAL result" in caplog.text and "shard-000001.tar: 1 samples, 4 listed" in caplog.text

    before = checksums(out.parent)
    code, err = argent("evaluate", *run, "--config", analysis_config(tmp_path, val_dataset, bad_data="strict"))
    assert code == 2 and "Traceback" not in err
    assert str(val_dataset / "manifest.json") in err and "split 'val'" in err
    assert "8 samples in 2 shard(s) listed" in err and "5 samples in 2 shard(s) found" in err
    assert "shard-000001.tar: 1 samples, 4 listed" in err and "argent synth" in err
    assert checksums(out.parent) == before  # the skip-mode result is kept as it was
