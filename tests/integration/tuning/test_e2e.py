"""`argent tune` end to end: two tiny real trials on a generated hiershapes set, scored on held-out
validation benchmarks (zero-shot on classification_val; PEP on a hierarcaps_val split drawn with
another seed, laid out as data/hiershapes/hierarcaps_val/), tracked in MLflow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow
import optuna
import polars as pl
import pytest
import torch
import yaml

from argent.tuning import main
from tests.fixtures import ROOT, train_and_validation_draws


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = train_and_validation_draws(tmp_path_factory.mktemp("tune_data"), train_scenes=16)
    # The path contract of the workflow: <hiershapes>/hierarcaps_val/ beside <hiershapes>/hierarcaps/.
    shutil.copytree(root / "val" / "hierarcaps", root / "train" / "hierarcaps_val")
    return root


def workflow_config(tmp: Path, data: Path) -> dict:
    hs = data / "train"
    return {
        "results": str(tmp / "results"),
        "variants_file": str(ROOT / "config" / "variants.yaml"),
        "data": {"train_shards": str(data / "train" / "train" / "shard-*.tar"), "min_box_area": 84},
        "optim": {"warmup_steps": 1},
        "train": {"batch_size": 8, "steps": 4, "log_every": 2, "shuffle_buffer": 16},
        "tracking": {"enabled": True, "uri": f"sqlite:///{tmp / 'mlflow.db'}", "experiment": "e2e"},
        "benchmarks": {
            "hs_zeroshot_val": {"protocol": "zeroshot", "split": "val", "root": str(hs / "classification_val"),
                                "taxonomy": str(hs / "classification_val" / "taxonomy.txt"), "templates": ["a {}"]},
            "hs_pep_val": {"protocol": "pep", "split": "val", "hierarcaps_csv": str(hs / "hierarcaps_val" / "hierarcaps_test.csv"),
                           "image_dir": str(hs / "hierarcaps_val" / "images")},
            # The test splits: present in the config, never read by the study.
            "hs_zeroshot": {"protocol": "zeroshot", "root": str(hs / "classification"), "templates": ["a {}"]},
            "hs_pep": {"protocol": "pep", "hierarcaps_csv": str(hs / "hierarcaps" / "hierarcaps_test.csv"),
                       "image_dir": str(hs / "hierarcaps" / "images")},
        },
        "tune": {
            "study": "weights", "base_variant": "argent", "size": "tiny", "seed": 0, "n_trials": 5,
            "sampler": {"name": "tpe", "seed": 0},
            "pruner": {"name": "median", "n_startup_trials": 2, "n_warmup_steps": 1},
            "objective": [{"benchmark": "hs_zeroshot_val", "metric": "top1", "weight": 0.5},
                          {"benchmark": "hs_pep_val", "metric": "auc", "weight": 0.5}],
            "direction": "maximize",
            "train_overrides": ["train.steps=4"],
            "report_every": 2,
            "heartbeat_interval": 5,
        },
    }


def test_tune_cli_two_tiny_trials(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    monkeypatch.chdir(tmp_path)
    cfg = workflow_config(tmp_path, data)
    # A relative variants_file is read from the working folder, as `argent train` reads it, wherever
    # the config file lies.
    (tmp_path / "catalogue").mkdir()
    shutil.copy(ROOT / "config" / "variants.yaml", tmp_path / "catalogue" / "variants.yaml")
    cfg["variants_file"] = "catalogue/variants.yaml"
    config = tmp_path / "studies" / "weights" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(yaml.safe_dump(cfg))

    two = ["--set", "tune.n_trials=2"]  # --set overrides the config file's budget of 5
    assert main(["--config", str(config), "--study", "weights", *two]) == 0
    out = tmp_path / "results" / "tune" / "weights"
    study = optuna.load_study(study_name="weights", storage=f"sqlite:///{out / 'optuna.db'}")
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    for t in trials:
        run = out / "trials" / str(t.number)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["steps"] == 4
        resolved = yaml.safe_load((run / "config.yaml").read_text())
        assert {k: resolved["variant"][k] for k in t.params} == t.params, "sampled fields trained as variant overrides"
        assert resolved["train"]["checkpoint_every"] == 2
        assert sorted(t.intermediate_values) == [2, 4], "scored at the mid checkpoint and at the end"
        scores = t.user_attrs["scores"]
        assert 0 <= scores["hs_pep_val/auc"] <= 1 and 0 <= scores["hs_zeroshot_val/top1"] <= 1
        assert t.value == pytest.approx(0.5 * scores["hs_pep_val/auc"] + 0.5 * scores["hs_zeroshot_val/top1"])

    best = yaml.safe_load((out / "best.yaml").read_text())
    assert set(best["variant"]) == {"entailment_weight", "norm_reg_weight", "huber_beta"}
    assert best["value"] == max(t.value for t in trials)
    assert len(pl.read_csv(out / "trials.csv")) == 2
    assert (out / "optimization_history.png").exists() and (out / "param_importances.png").exists()

    client = mlflow.MlflowClient(tracking_uri=cfg["tracking"]["uri"])
    exp = client.get_experiment_by_name("e2e-tune-weights")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("kind") == "study"]
    nested = [r for r in runs if r.data.tags.get("kind") == "trial"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(nested) == 2 and all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in nested)
    for r in nested:  # one run per trial: the tune values and the trial's own training curves
        assert r.data.tags["optuna_state"] == "COMPLETE" and r.info.status == "FINISHED"
        assert [m.step for m in client.get_metric_history(r.info.run_id, "tune/value")] == [2, 4]
        assert "loss" in r.data.metrics and "variant.huber_beta" in r.data.params

    # A second run of the finished study trains nothing and leaves the trials as they were.
    assert main(["--config", str(config), "--study", "weights", *two]) == 0
    assert [(t.number, t.value) for t in study.get_trials()] == [(t.number, t.value) for t in trials]
    (out / "best.yaml").unlink()
    assert main(["--config", str(config), "--study", "weights", "--export-only", *two]) == 0
    assert yaml.safe_load((out / "best.yaml").read_text()) == best
