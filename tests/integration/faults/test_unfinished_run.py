"""Finished means finished: an evaluation of a run without its ``summary.json`` (killed before its last
step) says ``"partial": true`` with the reason and one log line, and the tables mark its cell †."""

from __future__ import annotations

import json
import logging

import polars as pl
import pytest
import torch

from argent.engine.trainer import train
from argent.tables.collect import LONG_SCHEMA, collect
from argent.tables.paper import PARTIAL_MARK, TableInput, layout
from argent.tablespec.section import Column, Row
from tests.fixtures import analysis_config, stream, tiny_exp


def _die_at_step_3(step: int, batch: dict) -> dict:
    if step == 2:  # 0-based: after the checkpoint of step 2
        raise RuntimeError("killed")
    return batch


@pytest.fixture
def unfinished_run(tmp_path):
    """A run of 4 steps that died at step 3: checkpoint of step 2, no summary.json."""
    out = tmp_path / "unfinished" / "meru-tiny" / "seed0"
    torch.set_num_threads(1)
    with pytest.raises(RuntimeError, match="killed"):
        train(tiny_exp(steps=4, checkpoint_every=2), out, batches=stream, batch_hook=_die_at_step_3)
    assert (out / "checkpoint.pt").is_file() and not (out / "summary.json").exists()
    return out


def test_evaluating_an_unfinished_run_says_partial(unfinished_run, finished_run, val_dataset, tmp_path, argent,
                                                   caplog):
    config = analysis_config(tmp_path, val_dataset)
    out = tmp_path / "eval" / "hs_analysis.json"
    with caplog.at_level(logging.WARNING):
        code, err = argent("evaluate", "--run", unfinished_run, "--benchmark", "hs_analysis", "--out", out,
                           "--config", config, "--threads", "1", "--no-default")  # its own benchmarks file
    assert code == 0, err
    result = json.loads(out.read_text())
    assert result["partial"] is True
    assert result["partial_reason"] == "run unfinished: no summary.json (step 2 of 4)"
    assert [r.getMessage() for r in caplog.records if "run unfinished" in r.getMessage()] == [
        f"{unfinished_run}: PARTIAL result, run unfinished: no summary.json (step 2 of 4)"]

    code, err = argent("evaluate", "--run", finished_run, "--benchmark", "hs_analysis", "--out", out,
                       "--config", config, "--threads", "1", "--no-default")
    assert code == 0, err
    result = json.loads(out.read_text())
    assert result["partial"] is False and "partial_reason" not in result


def _eval_json(folder, partial: bool, value: float) -> None:
    folder.mkdir(parents=True)
    (folder / "hs_zeroshot.json").write_text(json.dumps(
        {"variant": "meru", "size": "tiny", "seed": int(folder.name[4:]), "metrics": {"top1": value},
         "partial": partial}))


def test_tables_mark_a_partial_evaluation_with_the_partial_mark(tmp_path):
    _eval_json(tmp_path / "main" / "meru-tiny" / "seed0", False, 0.5)
    _eval_json(tmp_path / "main" / "meru-tiny" / "seed1", True, 0.7)  # the unfinished run
    (tmp_path / "main" / "clip-tiny" / "seed0").mkdir(parents=True)
    (tmp_path / "main" / "clip-tiny" / "seed1").mkdir()
    (tmp_path / "main" / "clip-tiny" / "seed0" / "hs_zeroshot.json").write_text(json.dumps(
        {"variant": "clip", "size": "tiny", "seed": 0, "metrics": {"top1": 0.4}, "partial": False}))
    (tmp_path / "main" / "clip-tiny" / "seed1" / "hs_zeroshot.json").write_text(json.dumps(
        {"variant": "clip", "size": "tiny", "seed": 1, "metrics": {"top1": 0.6}}))  # an older JSON: no flag
    long = collect(tmp_path).drop("group")
    assert long.schema["partial"] == LONG_SCHEMA["partial"]
    assert long.filter(pl.col("partial"))["variant"].to_list() == ["meru"]
    data = TableInput.build(long, ["tiny"], {"meru": [0, 1], "clip": [0, 1]})
    lines, records = layout(data, [Row("MERU", "meru"), Row("CLIP", "clip")],
                            [Column("Cls", "hs_zeroshot", "top1", 100)])
    assert lines[0]["Cls"].endswith(PARTIAL_MARK) and not lines[1]["Cls"].endswith(PARTIAL_MARK)
    assert [r["partial"] for r in records] == [True, False]
