"""Optuna on a real PostgreSQL: `argent tune` workers as separate processes share one study."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from stackutil import ROOT, argent, argent_cmd, child_env, folder_metrics, workflow_config

pytestmark = pytest.mark.stack


def worker(config: Path, storage: str, study: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen(argent_cmd("tune", "--config", str(config), "--study", study, "--set", f"tune.storage={storage}",
                                       "--no-export", "--threads", "1"),
                            cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def ran(proc: subprocess.Popen, log: Path) -> dict[str, int]:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"worker failed:\n{log.read_text()[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])["ran"]  # the worker's trial counts by final state


def states(study: optuna.Study) -> list[str]:
    return [t.state.name for t in study.get_trials()]


def test_two_workers_finish_exactly_the_budget(stack, shapes, tmp_path):
    config = workflow_config(tmp_path, shapes, stack["mlflow"], "stack-tune", n_trials=4)
    logs = [tmp_path / f"worker{i}.log" for i in (0, 1)]
    procs = [worker(config, stack["optuna"], "two_workers", log) for log in logs]
    counts = [ran(p, log) for p, log in zip(procs, logs)]
    print(f"trials per worker on PostgreSQL: {counts}")

    study = optuna.load_study(study_name="two_workers", storage=stack["optuna"])
    assert states(study) == ["COMPLETE"] * 4, "exactly the budget, no extra trial"
    assert sum(sum(c.values()) for c in counts) == 4
    assert all(sum(c.values()) >= 1 for c in counts), f"both workers took trials: {counts}"
    numbers = sorted(t.number for t in study.get_trials())
    assert numbers == [0, 1, 2, 3]
    for t in study.get_trials():  # every trial trained into its own complete run folder
        run = tmp_path / "results" / "tune" / "two_workers" / "trials" / str(t.number)
        assert json.loads((run / "summary.json").read_text())["steps"] == 4
        assert t.value == pytest.approx(t.user_attrs["scores"]["hs_zeroshot_val/top1"])

    # MLflow over HTTP: the study is a parent run, each trial a nested run with its training curves.
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=stack["mlflow"])
    found = client.search_runs([client.get_experiment_by_name("stack-tune-tune-two_workers").experiment_id])
    parents = [r for r in found if r.data.tags.get("kind") == "study"]
    nested = [r for r in found if r.data.tags.get("kind") == "trial"]
    print(f"tuning runs read back from the MLflow server: {len(parents)} study + {len(nested)} trials")
    assert len(parents) == 1 and len(nested) == 4
    for r in nested:
        run_dir = tmp_path / "results" / "tune" / "two_workers" / "trials" / r.data.tags["optuna_trial"]
        assert r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id and r.info.status == "FINISHED"
        assert r.data.tags["argent_run_id"] == str(run_dir.resolve())
        loss = {m.step: m.value for m in client.get_metric_history(r.info.run_id, "loss")}
        assert loss == pytest.approx(folder_metrics(run_dir)["loss"])
        assert [m.step for m in client.get_metric_history(r.info.run_id, "tune/value")] == [2, 4]

    # The export reads the PostgreSQL study alone.
    proc = argent("tune", "--config", str(config), "--study", "two_workers", "--set", f"tune.storage={stack['optuna']}",
                  "--export-only")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "results" / "tune" / "two_workers" / "best.yaml").is_file()


def test_a_killed_worker_loses_no_finished_trial_and_its_trial_is_retried(stack, shapes, tmp_path):
    config = workflow_config(tmp_path, shapes, stack["mlflow"], "stack-tune", n_trials=2,
                             train_overrides=["train.steps=8"])
    storage, name = stack["optuna"], "killed_worker"
    log = tmp_path / "victim.log"
    victim = worker(config, storage, name, log)
    deadline = time.monotonic() + 600
    while True:  # wait for one finished trial and a second one running
        assert victim.poll() is None, f"worker ended before it could be killed:\n{log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, "no second trial started in 10 min"
        try:
            s = states(optuna.load_study(study_name=name, storage=storage))
        except KeyError:
            s = []
        if s.count("COMPLETE") >= 1 and "RUNNING" in s:
            break
        time.sleep(0.5)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    before = {t.number: (t.state.name, t.value, t.params) for t in optuna.load_study(study_name=name, storage=storage).get_trials()}
    killed = [n for n, (state, _, _) in before.items() if state == "RUNNING"]
    assert len(killed) == 1

    time.sleep(7)  # past the grace period: the dead worker's heartbeat is stale
    log2 = tmp_path / "rescuer.log"
    counts = ran(worker(config, storage, name, log2), log2)
    print(f"after SIGKILL, the second worker ran: {counts}")

    trials = optuna.load_study(study_name=name, storage=storage).get_trials()
    for t in trials:  # the finished trials are untouched
        if t.number in before and before[t.number][0] == "COMPLETE":
            assert (t.state.name, t.value, t.params) == before[t.number]
    stale = trials[killed[0]]
    assert stale.state.name == "FAIL", "the killed trial is marked failed ..."
    retried = optuna.storages.RetryFailedTrialCallback.retried_trial_number
    retries = [t for t in trials if retried(t) == stale.number]
    assert len(retries) == 1 and retries[0].params == stale.params, "... and re-run with its parameters"
    assert retries[0].state.name == "COMPLETE"
    assert [t.state.name for t in trials].count("COMPLETE") == 2, "the budget counts the retry, not the stale trial"


def test_an_unreachable_postgresql_url_is_a_clear_message(shapes, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = workflow_config(tmp_path, shapes, f"sqlite:///{tmp_path / 'mlflow.db'}", "x")
    url = f"postgresql://argent:secret@127.0.0.1:{port}/optuna"
    proc = argent("tune", "--config", str(config), "--set", f"tune.storage={url}", "--set", "tune.n_trials=1", timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"127.0.0.1:{port}" in proc.stderr and "secret" not in proc.stderr
    assert "tune.storage" in proc.stderr
