"""`argent check` refuses what the job would refuse, before any job runs (issue 45 C): a device the
machine lacks, a model that cannot fit its memory, shards that are folders, an objective metric the
study's benchmark does not write. Each was passed by the check and failed (or was skipped) in a job."""

from __future__ import annotations

import pytest

from tests.fixtures import bad_shard, config_with

GIB = 2**30


def cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif("cuda_visible()", reason="the machine has a CUDA device")
@pytest.mark.parametrize("extra, key", [
    ({"clean": {"device": "cuda"}}, "clean.device"),  # was passed: only train.device was checked
    ({"groups": {"main": {"variants": ["meru"], "overrides": {"train": {"device": "cuda"}}}}},
     "groups.main.overrides.train.device"),
])
def test_a_device_the_machine_lacks_names_its_key(tmp_path, argent, extra, key):
    code, err = argent("check", "--config", config_with(tmp_path, {}, **extra))
    assert code == 2 and f"{key}: device 'cuda': no CUDA device is visible; set {key}: cpu" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("model, most", [
    ({"embed_dim": 2**31}, "the projections to the embedding (2,048.0 GiB: model.tiny.embed_dim 2147483648)"),
    ({"context_length": 10**7}, "the text activations"),
    ({"image_size": 800_000}, "the image activations"),
])
def test_a_model_that_cannot_fit_the_memory_is_refused_with_the_shortfall(tmp_path, argent, monkeypatch, model, most):
    """Each passed the check, then failed as an out-of-memory RuntimeError inside the train job."""
    monkeypatch.setattr("argent.models.memory.physical_memory", lambda: 16.0 * GIB)
    tiny = {"vision_width": 32, "vision_layers": 1, "vision_heads": 2, "text_width": 32, "text_layers": 1,
            "text_heads": 2, "embed_dim": 32}
    code, err = argent("check", "--config", config_with(tmp_path, {}, model={"tiny": {**tiny, **model}}))
    assert code == 2 and "run main/meru-tiny: training needs at least " in err and "this machine has 16.0 GiB" in err
    assert "GiB short); most of it is " + most in err and "Traceback" not in err
    code, err = argent("check", "--config", config_with(tmp_path, {}, model={"tiny": tiny}))
    assert "training needs" not in err  # the tiny model itself fits


def test_shards_that_are_folders_are_refused_not_skipped(tmp_path, argent):
    shards = tmp_path / "shards"
    bad_shard(shards / "shard-0.tar")  # readable: six good samples
    (shards / "shard-1.tar").mkdir()  # matched by the pattern; the shard reader keeps files only (was: ok)
    data = {"train_shards": str(shards / "shard-*.tar"), "format": "plain"}
    code, err = argent("check", "--config", config_with(tmp_path, {}, data=data))
    assert code == 2 and f"data.train_shards: {shards}/shard-*.tar: {shards}/shard-1.tar is a folder" in err
    code, err = argent("check", "--config", config_with(tmp_path, {}, data={**data, "train_shards": str(shards)}))
    assert code == 2 and f"data.train_shards: {shards}: {shards} is a folder, not a shard file" in err
    assert f"name the .tar files, e.g. {shards}/shard-*.tar" in err and "Traceback" not in err


def test_a_misspelt_objective_metric_is_refused_by_argent_check(tmp_path, argent):
    """The study refused it at its start; `argent check` (the DAG's first job) passed it."""
    tune = {"enabled": True, "objective": [{"benchmark": "hs_zeroshot_val", "metric": "top_1", "weight": 1.0}]}
    code, err = argent("check", "--config", config_with(tmp_path, {}, tune=tune))
    assert code == 2 and "tune.objective[0].metric: 'top_1' is not a metric of benchmarks.hs_zeroshot_val" in err
    assert "Traceback" not in err
