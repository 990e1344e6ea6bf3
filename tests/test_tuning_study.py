"""Optuna study mechanics with cheap objectives (no training): shared storage, budget, kill/resume,
pruning, divergence, export, config validation."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import polars as pl
import pytest
import yaml

from argent.config import ConfigError, experiment_from_dict
from argent.engine.trainer import TrainingDiverged
from argent.tuning import (
    TuneError,
    budget_used,
    export_study,
    finished_in_budget,
    main,
    parse_tune,
    run_study,
    study_spec,
    validation_benchmarks,
)

ROOT = Path(__file__).resolve().parents[1]

BASE = {
    "study": "cheap",
    "n_trials": 8,
    "sampler": {"name": "random", "seed": 0},
    "pruner": {"name": "none"},
    "objective": [{"benchmark": "val_bench", "metric": "top1"}],
    "direction": "maximize",
    "heartbeat_interval": 1,
    "grace_period": 2,
}

# A worker process: joins the study, waits at a barrier so that workers really overlap, and runs a
# cheap objective that logs "start k" / "done k" lines (O_APPEND: whole lines, one writer each).
WORKER = r"""
import json, sys, time, os
from pathlib import Path
from argent.tuning import parse_tune, run_study, study_spec
args = json.loads(sys.argv[1])
spec = study_spec(parse_tune(args["tune"]), args["out"])
events = Path(args["events"])
def note(text):
    fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (text + "\n").encode()); os.close(fd)
def objective(ctx):
    note(f"start {ctx.number} {args['worker']}")
    if ctx.number >= args["hang_from"]:
        time.sleep(600)  # stands for a long trial; the test kills the worker here
    x = ctx.params["entailment_weight"]
    for step in range(1, args["reports"] + 1):
        time.sleep(args["sleep"])
        ctx.report(x * step, step)
    note(f"done {ctx.number} {args['worker']}")
    return x
Path(args["out"]).mkdir(parents=True, exist_ok=True)
Path(args["out"], f"ready-{args['worker']}").touch()
while args.get("barrier") and not Path(args["out"], "go").exists():
    time.sleep(0.05)
print(json.dumps(run_study(spec, objective)))
"""


def worker(tmp: Path, tune: dict, name: str, *, sleep: float = 0.1, reports: int = 2, barrier: bool = False,
           hang_from: int = 1 << 30) -> subprocess.Popen:
    args = {"tune": tune, "out": str(tmp / "study"), "events": str(tmp / "events.log"), "worker": name,
            "sleep": sleep, "reports": reports, "barrier": barrier, "hang_from": hang_from}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(tmp: Path) -> list[tuple[str, int, str]]:
    path = tmp / "events.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(kind, int(num), who) for kind, num, who in (line.split() for line in lines)]


def stored_trials(spec) -> list:
    return optuna.load_study(study_name=spec.tune.study, storage=spec.storage_url).get_trials()


def make_spec(tmp: Path, **changes):
    return study_spec(parse_tune({**BASE, **changes}), tmp / "study")


# ---- several workers, one study ---------------------------------------------------------------


def test_two_worker_processes_finish_the_budget_exactly(tmp_path):
    # No worker dies here: a grace period far above the heartbeat keeps a live worker whose heart
    # thread a loaded 2-core machine delays by > 2 s from being failed as stale by the other.
    tune = {**BASE, "n_trials": 8, "grace_period": 30}
    procs = [worker(tmp_path, tune, name, sleep=0.15, barrier=True) for name in ("a", "b")]
    deadline = time.time() + 120
    while not all((tmp_path / "study" / f"ready-{n}").exists() for n in ("a", "b")):
        assert time.time() < deadline and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.05)
    (tmp_path / "study" / "go").touch()
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs

    trials = stored_trials(make_spec(tmp_path, n_trials=8))
    assert len(trials) == 8 and sorted(t.number for t in trials) == list(range(8))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    done = [(num, who) for kind, num, who in events(tmp_path) if kind == "done"]
    assert sorted(num for num, _ in done) == list(range(8)), "every trial ran exactly once"
    assert {who for _, who in done} == {"a", "b"}, "both workers took trials"
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(params)) == 8, "per-trial sampler seeds: no two workers draw the same parameters"
    ran = [json.loads(out.strip().splitlines()[-1])["ran"] for out, _ in outs]
    assert sum(r.get("COMPLETE", 0) for r in ran) == 8


def test_killed_worker_is_resumed_without_redoing_finished_trials(tmp_path):
    tune = {**BASE, "n_trials": 6}
    proc = worker(tmp_path, tune, "a", sleep=0.05, reports=3, hang_from=2)
    deadline = time.time() + 120
    while ("start", 2, "a") not in events(tmp_path):  # trials 0 and 1 done, trial 2 running
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    spec = make_spec(tmp_path, n_trials=6)
    stored = stored_trials(spec)
    before = {t.number: (t.value, t.datetime_complete) for t in stored if t.state == optuna.trial.TrialState.COMPLETE}
    (killed,) = [t.number for t in stored if t.state == optuna.trial.TrialState.RUNNING]
    assert sorted(before) == [0, 1] and killed == 2

    rerun = worker(tmp_path, tune, "b", sleep=0.05, reports=1)  # heartbeat 1 s, grace 2 s
    out, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    trials = stored_trials(spec)
    by_number = {t.number: t for t in trials}
    for number, (value, completed) in before.items():  # untouched, not redone
        assert (by_number[number].value, by_number[number].datetime_complete) == (value, completed)
    assert by_number[killed].state == optuna.trial.TrialState.FAIL
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    assert len(retries) == 1 and retries[0].state == optuna.trial.TrialState.COMPLETE
    assert retries[0].params == by_number[killed].params, "the dead worker's parameters are retried"
    counted = finished_in_budget(trials)
    assert len(counted) == 6 and budget_used(trials) == 6
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in counted)
    done = [n for k, n, _ in events(tmp_path) if k == "done"]
    assert sorted(done) == sorted(t.number for t in counted), "each counted trial finished exactly once"
    assert result["ran"] == {"COMPLETE": 6 - len(before)}


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
    config.write_text(yaml.safe_dump({"tune": {**BASE, "n_trials": 2}, "tracking": {"enabled": False}}))
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
        parse_tune({**BASE, **change})


def test_defaults_search_the_three_argent_weights():
    tune = parse_tune({"study": "s", "objective": BASE["objective"]})
    assert tune.direction == "maximize"
    assert {k: (v.low, v.high, v.log) for k, v in tune.space.items()} == {
        "entailment_weight": (0.01, 1.0, True), "norm_reg_weight": (0.01, 1.0, True), "huber_beta": (0.01, 2.0, True)}
    assert tune.sampler.name == "tpe" and tune.pruner.name == "median"


def test_objective_benchmarks_must_be_validation_splits(tmp_path):
    tune = parse_tune({**BASE, "objective": [{"benchmark": "zs", "metric": "top1"},
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
