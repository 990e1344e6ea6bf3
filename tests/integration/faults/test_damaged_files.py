"""A damaged file ends in one line, and recovery goes on (issue 54, item 2): a checkpoint cut to 5–65 KB
(torch's zip reader fails with ``OSError: [Errno 22] Invalid argument``) is set aside under a name that
says so by ``--resume auto``, which trains from scratch saying which; ``--resume strict``, ``evaluate`` and
``restamp`` say so in one line; ``argent restamp --results`` reports each damaged folder and goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from argent.data.shards import ShardWriter
from argent.runs import CheckpointError, read_checkpoint
from tests.fixtures import ROOT, TINY, jpeg, train_tiny


def _data_config(tmp_path: Path) -> Path:
    """A workflow config for ``argent train`` by hand on one real shard (1 step of 4 samples)."""
    shards = tmp_path / "shards"
    shards.mkdir(exist_ok=True)
    with ShardWriter(shards / "shard-000000.tar") as writer:
        for i in range(4):
            writer.write(f"k{i}", {"txt": f"a red square number {i}".encode(), "jpg": jpeg(i)})
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4,
                                                         "checkpoint_every": 1},
                                      "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain"}}))
    return config


def _cut(checkpoint: Path, size: int) -> bytes:
    data = checkpoint.read_bytes()[:size]
    checkpoint.write_bytes(data)
    return data


@pytest.mark.parametrize("size", [5_000, 65_000])
def test_a_checkpoint_cut_short_is_a_checkpoint_error_not_an_oserror(tmp_path, size):
    train_tiny(tmp_path / "run")
    _cut(tmp_path / "run" / "checkpoint.pt", size)
    with pytest.raises(CheckpointError, match=r"checkpoint is unreadable, damaged or cut short"):
        read_checkpoint(tmp_path / "run" / "checkpoint.pt")


def test_resume_auto_sets_a_cut_checkpoint_aside_and_trains_from_scratch_saying_so(tmp_path, argent, caplog):
    config = _data_config(tmp_path)
    run = tmp_path / "run"
    train = ("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", run, "--no-default")
    assert argent(*train)[0] == 0
    cut = _cut(run / "checkpoint.pt", 20_000)
    code, err = argent(*train, "--resume", "strict")
    assert code == 2 and "checkpoint is unreadable, damaged or cut short" in err and "Traceback" not in err, err
    assert (run / "checkpoint.pt").read_bytes() == cut  # strict touches nothing
    with caplog.at_level("WARNING", logger="argent.runs"):
        code, err = argent(*train, "--resume", "auto")
    assert code == 0 and "Traceback" not in err, err
    aside = list(run.glob("checkpoint.pt.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == cut  # kept, under a name that says so
    said = caplog.text
    assert f"moved it to {aside[0]} (kept, not deleted)" in said and "training from scratch" in said, said
    assert read_checkpoint(run / "checkpoint.pt")["step"] == 1  # the fresh run finished


def test_evaluate_of_a_run_with_a_cut_checkpoint_is_one_line(tmp_path, argent, finished_run):
    cut = _cut(finished_run / "checkpoint.pt", 30_000)
    code, err = argent("evaluate", "--run", finished_run, "--benchmark", "hs_zeroshot", "--config",
                       ROOT / "config" / "config.yaml", "--out", tmp_path / "zs.json")
    assert code == 2 and "checkpoint is unreadable, damaged or cut short" in err and "Traceback" not in err, err
    assert (finished_run / "checkpoint.pt").read_bytes() == cut and not (tmp_path / "zs.json").exists()


def test_restamp_reports_each_damaged_folder_and_goes_on(tmp_path, argent):
    """Three folders: the first and the last with a cut checkpoint, the middle one whole (already
    current). Each damaged one is named, the whole one is still looked at; exit 2 at the end."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**TINY, "results": str(tmp_path / "results"), "runs": {"sizes": ["tiny"]},
                                      "groups": {"main": {"variants": ["meru"], "seeds": [0, 1, 2]}}}))
    runs = tmp_path / "results" / "runs" / "main" / "meru-tiny"
    train_tiny(runs / "seed0")
    for seed in (1, 2):
        shutil.copytree(runs / "seed0", runs / f"seed{seed}")
    for seed in (0, 2):
        _cut(runs / f"seed{seed}" / "checkpoint.pt", 10_000)
    code, err = argent("restamp", "--results", tmp_path / "results", "--config", config)
    assert code == 2 and "Traceback" not in err, err
    for seed in (0, 2):
        assert f"{runs / f'seed{seed}'}/checkpoint.pt: checkpoint is unreadable, damaged or cut short" in err, err
    assert "2 of 3 run folder(s) not re-stamped" in err
