"""Config checked fully and once; every verb's expected failure is one message, exit 2, no traceback."""

from __future__ import annotations

import errno
import os

import pytest
import torch
import yaml

from argent.cli import explain
from argent.io import ReadError, read_json
from argent.runs import RunFolder
from tests.fixtures import ROOT, checksums, train_tiny, write_config


@pytest.mark.parametrize("override, names", [
    ("optimm.lr=1", ["optimm", "allowed"]),
    ("train.stepz=3", ["train", "stepz", "allowed"]),
    ("model.huge.vision_width=3", ["model", "huge", "allowed"]),
    ("train.steps=-5", ["train.steps", ">= 1"]),
    ("train.checkpoint_every=0", ["train.checkpoint_every", ">= 1"]),
    ("train.log_every=0", ["train.log_every", ">= 1"]),
    ("train.diagnostics_every=0", ["train.diagnostics_every"]),
    ("optim.lr=-1", ["optim.lr", "> 0"]),
    ("optim.betas=[0.9, 1.5]", ["optim.betas[1]", "< 1"]),
    ("variant.entailment_weight=-0.1", ["entailment_weight", ">= 0"]),
])
def test_bad_config_value_names_its_key_and_writes_nothing(finished_run, tmp_path, argent, override, names):
    before = checksums(finished_run)
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", finished_run,
                       "--set", override)
    assert code == 2 and "Traceback" not in err
    assert all(name in err for name in names), err
    assert checksums(finished_run) == before


def test_misspelt_top_level_section_in_the_file_is_an_error(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml", optimm={"lr": 0.1})
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", tmp_path / "r")
    assert code == 2 and "optimm" in err and str(config) in err
    assert not (tmp_path / "r").exists()


def test_the_schema_names_no_section_the_registry_lacks():
    from argent.config import WORKFLOW_SECTIONS

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(schema["properties"]) <= set(WORKFLOW_SECTIONS)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_is_one_message(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", tmp_path / "r",
                       "--set", "train.device=cuda")
    assert code == 2 and "'cuda'" in err and "cpu" in err and "Traceback" not in err
    code, err = argent("evaluate", "--run", tmp_path / "r", "--benchmark", "x", "--config", config,
                       "--out", tmp_path / "x.json", "--device", "cuda")
    assert code == 2 and "Traceback" not in err


def test_debug_shows_the_traceback(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    with pytest.raises(Exception, match="optimm"):
        argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", tmp_path / "r",
               "--set", "optimm.lr=1", "--debug")


@pytest.mark.parametrize("code_, words", [(errno.ENOSPC, "no space left"), (errno.EROFS, "read-only"),
                                          (errno.EACCES, "permission denied")])
def test_write_failures_are_one_message_and_keep_the_finished_run(finished_run, monkeypatch, code_, words):
    """Disk full / read-only / permission denied in the middle of a checkpoint write (a patched writer,
    for the three errno cases; tests/integration/faults/test_disk_full.py fills a real tmpfs). A fresh run into
    a finished run's folder fails; the finished run is untouched, no temp file is left, the message names the
    file."""
    def failing_save(obj, f):
        f.write(b"PK\x03\x04 half a checkpoint")
        raise OSError(code_, os.strerror(code_), str(getattr(f, "name", "?")))

    before = checksums(finished_run)
    monkeypatch.setattr("argent.engine.checkpoint.torch.save", failing_save)
    with pytest.raises(OSError) as info:
        train_tiny(finished_run, resume="no")
    message = explain(info.value)
    assert message and words in message and ".checkpoint." in message
    assert checksums(finished_run) == before


def test_torn_json_is_a_read_error_naming_the_file(tmp_path):
    path = tmp_path / "eval" / "meru-tiny" / "seed0" / "hs_zeroshot.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"metrics": {"top1": 0.5')
    with pytest.raises(ReadError, match=str(path)):
        read_json(path)


def test_evaluate_goes_on_after_a_failed_benchmark(finished_run, tmp_path, argent):
    config = tmp_path / "bench.yaml"
    config.write_text(yaml.safe_dump({"benchmarks": {
        "broken": {"protocol": "zeroshot", "root": str(tmp_path / "nowhere"), "taxonomy": str(tmp_path / "t.txt")},
        "also_broken": {"protocol": "retrieval", "format": "karpathy", "annotations": str(tmp_path / "a.json"),
                        "image_dir": str(tmp_path)},
    }}))
    code, err = argent("evaluate", "--run", finished_run, "--benchmark", "broken", "also_broken",
                       "--config", config, "--out-dir", tmp_path / "out")
    assert code == 2
    assert "broken" in err and "also_broken" in err, err  # both tried
    assert RunFolder(finished_run).summary.exists()
