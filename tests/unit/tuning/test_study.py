"""Optuna study mechanics with cheap objectives (no training), in one process: budget, pruning,
divergence, export, config validation (tests/integration/tuning/test_study_workers.py: several worker
processes, kill/resume)."""

from __future__ import annotations

import math

import optuna
import polars as pl
import pytest
import yaml

from argent.config import ConfigError, experiment_from_dict
from argent.engine.step import TrainingDiverged
from argent.tuning import (
    TuneError,
    export_study,
    main,
    parse_tune,
    run_study,
    validation_benchmarks,
)
from tests.fixtures import ROOT, STUDY_BASE, make_spec, stored_trials

# ---- pruning, divergence, failures ---------------------------------------------------------


def test_median_pruner_stops_bad_trials_early(tmp_path):
    spec = make_spec(tmp_path, n_trials=16, heartbeat_interval=0,
                     pruner={"name": "median", "n_startup_trials": 3, "n_warmup_steps": 1})
    steps = 6

    def objective(ctx):
        x = ctx.params["entailment_weight"]
        for step in range(1, steps + 1):
            ctx.report(x * step, step)  # a trial's curve keeps its rank: bad ones are bad early
        return x * steps

    result = run_study(spec, objective)
    trials = stored_trials(spec)
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    print(f"pruned {len(pruned)} of {len(trials)} trials")
    assert len(trials) == 16 and len(pruned) + len(complete) == 16
    assert len(pruned) >= 3 and len(complete) >= 3
    assert all(len(t.intermediate_values) < steps for t in pruned), "pruned trials stopped early"
    assert all(len(t.intermediate_values) == steps for t in complete)
    # A pruned trial was below the median of the earlier trials at the step it stopped.
    for t in pruned:
        step = max(t.intermediate_values)
        earlier = [u.intermediate_values[step] for u in trials if u.number < t.number and step in u.intermediate_values]
        assert t.intermediate_values[step] < sorted(earlier)[len(earlier) // 2] + 1e-12
    assert result["ran"]["PRUNED"] == len(pruned)


def test_diverging_and_nan_trials_do_not_stop_the_study(tmp_path):
    spec = make_spec(tmp_path, n_trials=5, heartbeat_interval=0)

    def objective(ctx):
        if ctx.number == 1:
            raise TrainingDiverged("step 3: loss term 'entailment' is nan")
        if ctx.number == 3:
            return float("nan")
        return ctx.params["entailment_weight"]

    result = run_study(spec, objective)
    trials = {t.number: t for t in stored_trials(spec)}
    assert len(trials) == 5 and result["ran"] == {"COMPLETE": 3, "FAIL": 2}
    assert trials[1].state == optuna.trial.TrialState.FAIL and "diverged" in trials[1].user_attrs["failure"]
    assert trials[3].state == optuna.trial.TrialState.FAIL and "nan" in trials[3].user_attrs["failure"]
    summary = export_study(spec)
    assert summary["finished"] and summary["best"]["number"] in (0, 2, 4)


def test_an_unexpected_error_fails_the_trial_and_stops_the_worker(tmp_path):
    spec = make_spec(tmp_path, n_trials=4, heartbeat_interval=0)

    def objective(ctx):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_study(spec, objective)
    (t,) = stored_trials(spec)
    assert t.state == optuna.trial.TrialState.FAIL and "KeyError" in t.user_attrs["failure"]


def test_raising_the_budget_extends_the_study_by_the_difference(tmp_path):
    assert run_study(make_spec(tmp_path, n_trials=2, heartbeat_interval=0), lambda ctx: 1.0)["ran"] == {"COMPLETE": 2}
    assert run_study(make_spec(tmp_path, n_trials=2, heartbeat_interval=0), lambda ctx: 1.0)["ran"] == {}
    assert run_study(make_spec(tmp_path, n_trials=5, heartbeat_interval=0), lambda ctx: 1.0)["ran"] == {"COMPLETE": 3}
    trials = stored_trials(make_spec(tmp_path))
    assert sorted(t.number for t in trials) == [0, 1, 2, 3, 4]
    assert len({tuple(t.params.items()) for t in trials}) == 5, "each slot draws its own values"


def test_a_study_with_another_config_is_refused(tmp_path):
    run_study(make_spec(tmp_path, n_trials=1, heartbeat_interval=0), lambda ctx: 1.0)
    other = make_spec(tmp_path, n_trials=1, heartbeat_interval=0,
                      space={"huber_beta": {"low": 0.1, "high": 1.0}})
    with pytest.raises(TuneError, match="not comparable"):
        run_study(other, lambda ctx: 1.0)


# ---- export -----------------------------------------------------------------------------------


def test_export_writes_best_yaml_that_train_reads_trials_csv_and_figures(tmp_path):
    spec = make_spec(tmp_path, n_trials=4, heartbeat_interval=0,
                     space={"entailment_weight": {"low": 0.01, "high": 1.0, "log": True},
                            "huber_beta": {"low": 0.1, "high": 2.0},
                            "adaptive_weight": {"choices": ["intra", "any"]},
                            "cement.margin_max": {"low": 0.05, "high": 0.2}})
    values = {}

    def objective(ctx):
        values[ctx.number] = -abs(math.log(ctx.params["huber_beta"]))
        return values[ctx.number]

    run_study(spec, objective)
    summary = export_study(spec)
    out = spec.out_dir
    best_number = max(values, key=values.get)
    assert summary["best"]["number"] == best_number and summary["finished"]

    doc = yaml.safe_load((out / "best.yaml").read_text())
    best = {t.number: t for t in stored_trials(spec)}[best_number]
    assert doc["trial"] == best_number and doc["value"] == pytest.approx(values[best_number])
    assert doc["variant"]["cement"] == {"margin_max": best.params["cement.margin_max"]}
    # `argent train --variant-file best.yaml` takes the variant: mapping as variant overrides (on a
    # variant with hard negatives: the Cement margin does nothing without them, and is refused there).
    exp = experiment_from_dict({}, "argent_negs_cement", "tiny", 0, base_dir=ROOT, variant_overrides=doc["variant"])
    assert exp.variant.huber_beta == best.params["huber_beta"]
    assert exp.variant.adaptive_weight == best.params["adaptive_weight"]
    assert exp.variant.entailment_weight == best.params["entailment_weight"]
    assert exp.variant.cement.margin_max == best.params["cement.margin_max"]

    frame = pl.read_csv(out / "trials.csv")
    assert frame["number"].to_list() == [0, 1, 2, 3] and set(frame["state"]) == {"COMPLETE"}
    assert frame["value"].to_list() == pytest.approx([values[i] for i in range(4)])
    assert {"param_huber_beta", "param_adaptive_weight", "param_cement.margin_max", "duration_s", "n_intermediate"} <= set(frame.columns)
    for name in ("optimization_history.png", "param_importances.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["notes"] == []
    assert not list(out.glob(".*tmp*")) and not list(out.glob(".best*")), "no temp files left behind"


def test_export_with_one_complete_trial_notes_the_missing_importance(tmp_path):
    spec = make_spec(tmp_path, n_trials=1, heartbeat_interval=0)
    run_study(spec, lambda ctx: 0.5)
    summary = export_study(spec)
    assert any(">= 2 complete trials" in n for n in summary["notes"])
    assert (spec.out_dir / "param_importances.png").exists() and (spec.out_dir / "best.yaml").exists()


def test_export_only_cli_without_a_complete_trial_fails_clearly(tmp_path, capsys):
    spec = make_spec(tmp_path, n_trials=2, heartbeat_interval=0)
    run_study(spec, lambda ctx: float("nan"))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"tune": {**STUDY_BASE, "n_trials": 2}, "tracking": {"enabled": False}}))
    assert main(["--config", str(config), "--out", str(spec.out_dir), "--export-only"]) == 1
    assert "no COMPLETE trial" in capsys.readouterr().err
    frame = pl.read_csv(spec.out_dir / "trials.csv")
    assert frame["state"].to_list() == ["FAIL", "FAIL"] and frame["failure"].str.contains("nan").all()
    assert not (spec.out_dir / "best.yaml").exists()


def test_export_of_a_missing_study_is_a_clear_error(tmp_path):
    with pytest.raises(TuneError, match="no study 'cheap'"):
        export_study(make_spec(tmp_path))


# ---- config validation ----------------------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    ({"bogus": 1}, r"tune: unknown key\(s\) \['bogus'\]; allowed: \[.*'objective'"),
    ({"sampler": {"name": "tpe", "sed": 1}}, r"tune\.sampler: unknown key\(s\) \['sed'\]; allowed: \['name', 'seed'"),
    ({"space": {"huber_beta": {"low": 0.1, "hi": 1}}}, r"tune\.space\.huber_beta: unknown key\(s\) \['hi'\]"),
    ({"objective": [{"benchmark": "b", "metric": "m", "wieght": 1}]}, r"tune\.objective\[0\]: unknown key\(s\) \['wieght'\]"),
    ({"n_trials": "many"}, r"tune\.n_trials: expected an integer, got 'many'"),
    ({"space": {"not_a_field": {"low": 0.1, "high": 1}}}, r"tune\.space\.not_a_field: .*not a variant field"),
    ({"space": {"huber_beta": {"low": 0.0, "high": 1, "log": True}}}, r"tune\.space\.huber_beta\.low: a log-scale"),
    ({"space": {"huber_beta": {"low": 2.0, "high": 1.0}}}, r"low \(2.0\) must be < high"),
    ({"space": {"geometry": {"low": 0, "high": 1}}}, r"tune\.space\.geometry: .*not numeric"),
    ({"sampler": {"name": "cmaes"}}, r"tune\.sampler\.name"),
    ({"objective": []}, r"tune\.objective: needs at least one"),
    ({"n_trials": 0}, r"tune\.n_trials: must be >= 1"),
    ({"train_overrides": ["train.steps"]}, r"tune\.train_overrides\[0\]"),
])
def test_bad_tune_sections_name_their_key(change, message):
    with pytest.raises(ConfigError, match=message):
        parse_tune({**STUDY_BASE, **change})


def test_defaults_search_the_three_argent_weights():
    tune = parse_tune({"study": "s", "objective": STUDY_BASE["objective"]})
    assert tune.direction == "maximize"
    assert {k: (v.low, v.high, v.log) for k, v in tune.space.items()} == {
        "entailment_weight": (0.01, 1.0, True), "norm_reg_weight": (0.01, 1.0, True), "huber_beta": (0.01, 2.0, True)}
    assert tune.sampler.name == "tpe" and tune.pruner.name == "median"


def test_objective_benchmarks_must_be_validation_splits(tmp_path):
    tune = parse_tune({**STUDY_BASE, "objective": [{"benchmark": "zs", "metric": "top1"},
                                             {"benchmark": "ret", "metric": "i2t_R@5"}]})
    zs = {"protocol": "zeroshot", "root": str(tmp_path / "classification")}
    ret = {"protocol": "retrieval", "annotations": "a.json", "image_dir": "img"}
    with pytest.raises(ConfigError, match=r"benchmarks\.zs is not a validation benchmark \(split: None\)"):
        validation_benchmarks(tune, {"benchmarks": {"zs": zs, "ret": ret}})
    with pytest.raises(ConfigError, match=r"benchmarks\.zs is not a validation benchmark \(split: 'test'\)"):
        validation_benchmarks(tune, {"benchmarks": {"zs": {**zs, "split": "test"}, "ret": ret}})
    with pytest.raises(ConfigError, match=r"'zs' is not under benchmarks"):
        validation_benchmarks(tune, {"benchmarks": {}})
    entries = validation_benchmarks(tune, {"benchmarks": {"zs": {**zs, "split": "val"}, "ret": {**ret, "split": "val"}}},
                                    base_dir=tmp_path)
    assert entries["zs"].protocol == "zeroshot" and entries["ret"].split == "val"  # Karpathy's val split
