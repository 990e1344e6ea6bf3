"""The study's objective serves the claims: a weighted sum of validation zero-shot top-1 and
validation PEP AUC, and never a test split (refused as a config error)."""

from __future__ import annotations

import math

import pytest
import yaml

from argent.config import ConfigError, deep_merge, derive_paths, load_yaml
from argent.tuning import TuneError, ValidationScorer, main, parse_tune, validation_benchmarks
from tests.fixtures import ROOT

VAL = {
    "hs_zeroshot_val": {"protocol": "zeroshot", "split": "val", "root": "data/hs/classification_val"},
    "hs_pep_val": {"protocol": "pep", "split": "val", "hierarcaps_csv": "data/hs/hierarcaps_val/hierarcaps_test.csv",
                   "image_dir": "data/hs/hierarcaps_val/images"},
}
TEST = {
    "hs_zeroshot": {"protocol": "zeroshot", "root": "data/hs/classification"},
    "hs_pep": {"protocol": "pep", "hierarcaps_csv": "data/hs/hierarcaps/hierarcaps_test.csv",
               "image_dir": "data/hs/hierarcaps/images"},
}
CLAIMS = [{"benchmark": "hs_zeroshot_val", "metric": "top1", "weight": 0.3},
          {"benchmark": "hs_pep_val", "metric": "auc", "weight": 0.7}]


def tune_with(objective: list[dict]) -> object:
    return parse_tune({"study": "s", "objective": objective})


def test_the_objective_is_the_weighted_sum_of_the_two_validation_metrics(tmp_path):
    tune = tune_with(CLAIMS)
    entries = validation_benchmarks(tune, {"benchmarks": {**VAL, **TEST}}, base_dir=tmp_path)
    assert sorted(entries) == ["hs_pep_val", "hs_zeroshot_val"], "only the objective's validation entries are read"
    results = {"hs_zeroshot_val": {"metrics": {"top1": 0.62, "top5": 0.9}},
               "hs_pep_val": {"metrics": {"auc": 0.81, "ap": 0.4, "levels": {"1": {"auc": 0.7}}}}}
    seen = []

    def fake_evaluate(model, name, entry):
        seen.append((model, name, entry.hierarcaps_csv if name == "hs_pep_val" else entry.root))
        return results[name]

    value, scores = ValidationScorer(tune.objective, entries, fake_evaluate)("model")
    assert value == pytest.approx(0.3 * 0.62 + 0.7 * 0.81)
    assert scores == {"hs_zeroshot_val/top1": 0.62, "hs_pep_val/auc": 0.81}
    assert {name for _, name, _ in seen} == {"hs_zeroshot_val", "hs_pep_val"}
    assert all("val" in path for _, _, path in seen), "the scorer reads the validation files"

    # Another weighting changes the value accordingly; a nested metric and a missing one.
    nested = tune_with([{"benchmark": "hs_pep_val", "metric": "levels.1.auc", "weight": 2.0}])
    assert ValidationScorer(nested.objective, entries, fake_evaluate)("m")[0] == pytest.approx(1.4)
    wrong = tune_with([{"benchmark": "hs_pep_val", "metric": "top1"}])
    with pytest.raises(TuneError, match="no metric 'top1'"):
        ValidationScorer(wrong.objective, entries, fake_evaluate)("m")
    results["hs_pep_val"]["metrics"]["auc"] = None  # n/a (a Euclidean model): the trial fails, not the study
    assert math.isnan(ValidationScorer(tune.objective, entries, fake_evaluate)("m")[0])


@pytest.mark.parametrize("benchmark", ["hs_zeroshot", "hs_pep"])
def test_a_test_split_in_the_objective_is_refused(benchmark):
    tune = tune_with([*CLAIMS, {"benchmark": benchmark, "metric": "top1", "weight": 1.0}])
    with pytest.raises(ConfigError, match=rf"tune\.objective\[2\]\.benchmark: benchmarks\.{benchmark} is not a "
                                          r"validation benchmark \(split: None\).*never the test split"):
        validation_benchmarks(tune, {"benchmarks": {**VAL, **TEST}})


def test_a_test_split_relabelled_as_val_is_refused():
    relabelled = {**VAL, "hs_pep_val": {**TEST["hs_pep"], "split": "val"}}
    with pytest.raises(ConfigError, match=r"benchmarks\.hs_pep_val is marked split: val but reads "
                                          r".*hierarcaps/hierarcaps_test\.csv, the data of the test benchmark benchmarks\.hs_pep"):
        validation_benchmarks(tune_with(CLAIMS), {"benchmarks": {**relabelled, **TEST}})


def shipped(*names: str) -> dict:
    cfg: dict = {}
    for name in names:  # Snakemake merges --configfile over the default config like this
        cfg = deep_merge(cfg, load_yaml(ROOT / "config" / name))
    return derive_paths(cfg)  # then the Snakefile fills in the derived paths, as every verb does


@pytest.mark.parametrize("configs", [("config.yaml",), ("config.yaml", "smoke.yaml")])
def test_the_shipped_study_scores_validation_zeroshot_and_pep(configs, tmp_path):
    cfg = shipped(*configs)
    tune = parse_tune(cfg["tune"])
    assert [(t.benchmark, t.metric) for t in tune.objective] == [("hs_zeroshot_val", "top1"), ("hs_pep_val", "auc")]
    assert all(t.weight > 0 for t in tune.objective) and tune.direction == "maximize"
    entries = validation_benchmarks(tune, cfg, base_dir=tmp_path)
    hs = cfg["hiershapes"]["out"]
    assert entries["hs_pep_val"].hierarcaps_csv == str(tmp_path / hs / "hierarcaps_val" / "hierarcaps_test.csv")
    assert entries["hs_zeroshot_val"].root == str(tmp_path / hs / "classification_val")
    # The val split is cleaned like the test split (same PEP protocol): its own clean csv and pool.
    assert cfg["clean"]["datasets"]["hiershapes_val"]["csv"] == f"{hs}/hierarcaps_val/hierarcaps_test.csv"
    results = cfg["results"]
    assert entries["hs_pep_val"].clean_csv == str(tmp_path / results / "data" / "hiershapes_val" / "hierarcaps_clean.csv")


def test_cli_set_overrides_are_checked_like_the_file(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"tune": {"study": "s", "objective": CLAIMS}, "tracking": {"enabled": False}}))
    assert main(["--config", str(config), "--set", "tune.sampler.sed=3", "--export-only"]) == 2
    err = capsys.readouterr().err
    assert "tune.sampler: unknown key(s) ['sed']; allowed: ['name', 'seed'" in err
    assert main(["--config", str(config), "--set", "tune.n_trials=lots", "--export-only"]) == 2
    assert "tune.n_trials: expected an integer, got 'lots'" in capsys.readouterr().err
    assert main(["--config", str(config), "--set", "tune.n_trials", "--export-only"]) == 2
    assert "--set 'tune.n_trials'" in capsys.readouterr().err
