"""Values the types allow but that make no sense are refused before any work, one message naming the
key and no traceback: thread counts, seeds, a warm-up as long as training, the context length, heads
that do not divide the width, an image the patches do not tile, a device torch does not know."""

from __future__ import annotations

import pytest

from argent.config import ConfigError, WorkflowConfig
from argent.plan.groups import build_plan
from tests.fixtures import ROOT, TINY, write_config

TRAIN = ["--variant", "meru", "--size", "tiny"]


@pytest.mark.parametrize("override, names", [
    ("optim.warmup_steps=3", ["optim.warmup_steps: 3 is longer than train.steps (2)"]),
    ("optim.warmup_steps=50", ["optim.warmup_steps: 50", "train.steps (2)"]),
    ("model.tiny.context_length=2", ["model.tiny.context_length: 2", ">= 3"]),
    ("model.tiny.vision_heads=3", ["model.tiny.vision_heads: 3 does not divide vision_width 32"]),
    ("model.tiny.text_heads=5", ["model.tiny.text_heads: 5 does not divide text_width 32"]),
    ("model.tiny.image_size=60", ["model.tiny.image_size: 60 is not a multiple of patch_size 8"]),
    ("train.device=gpu", ["train.device: 'gpu' is not a device", "cuda"]),
    ("train.device=cuda:x", ["train.device: 'cuda:x' is not a device"]),
])
def test_nonsense_values_name_their_key_before_any_work(tmp_path, argent, override, names):
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, *TRAIN, "--out", tmp_path / "r", "--set", override)
    assert code == 2 and "Traceback" not in err, err
    assert all(name in err for name in names), err
    assert not (tmp_path / "r").exists()


def test_a_negative_seed_is_refused(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, *TRAIN, "--seed", "-1", "--out", tmp_path / "r")
    assert code == 2 and "seed: -1 is out of range; seeds must be >= 0" in err
    assert not (tmp_path / "r").exists()
    cfg = {**TINY, "runs": {"sizes": ["tiny"], "seeds": [0, -1]}, "groups": {"main": {"variants": ["meru"]}}}
    with pytest.raises(ConfigError, match=r"runs\.seeds\[1\]: -1 is out of range"):
        build_plan(WorkflowConfig(cfg), ROOT)
    cfg["runs"]["seeds"], cfg["groups"]["main"]["seeds"] = [0], [-2]  # runs: is typed whole, used or not
    with pytest.raises(ConfigError, match=r"groups\.main\.seeds\[0\]: -2 is out of range"):
        build_plan(WorkflowConfig(cfg), ROOT)


@pytest.mark.parametrize("verb", [["train", "--config", "c.yaml", *TRAIN, "--out", "r"],
                                  ["evaluate", "--run", "r", "--benchmark", "b", "--config", "c.yaml", "--out", "o"],
                                  ["tune", "--config", "c.yaml"],
                                  ["probe", "--config", "c.yaml", "--run", "r", "--out", "o"]])
def test_negative_threads_are_refused_by_every_verb(verb, tmp_path, argent, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        argent(*verb, "--threads", "-3")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--threads: -3 is out of range" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_evaluation_device_is_one_message(finished_run, tmp_path, argent):
    config = write_config(tmp_path / "config.yaml", benchmarks={"b": {"protocol": "zeroshot", "root": str(tmp_path)}})
    code, err = argent("evaluate", "--run", finished_run, "--benchmark", "b", "--config", config,
                       "--out", tmp_path / "o.json", "--device", "gpu")
    assert code == 2 and "device 'gpu': not a device" in err and "Traceback" not in err
    assert not (tmp_path / "o.json").exists()
