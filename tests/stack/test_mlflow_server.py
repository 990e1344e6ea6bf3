"""Training runs log to a real `mlflow server` (PostgreSQL backend) over HTTP; what MLflow's client
reads back equals the run folders; a server that dies mid-run costs nothing that `argent track` can't
re-send. (Nested tuning runs on the server: tests/stack/test_optuna_postgres.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from stackutil import ROOT, argent, argent_cmd, child_env, folder_metrics, free_port, workflow_config

from argent.runs import RunFolder

pytestmark = pytest.mark.stack


def client(uri: str):
    import mlflow

    return mlflow.MlflowClient(tracking_uri=uri)


def assert_run_matches_folder(c, run, run_dir: Path) -> None:
    expected = folder_metrics(run_dir)
    assert expected, run_dir
    for name, by_step in expected.items():
        got = {m.step: m.value for m in c.get_metric_history(run.info.run_id, name)}
        assert got == pytest.approx(by_step, nan_ok=True), name


def train(config: Path, variant: str, out: Path, steps: int = 4) -> subprocess.CompletedProcess:
    return argent("train", "--config", str(config), "--variant", variant, "--size", "tiny", "--seed", "0",
                  "--out", str(out), "--threads", "1", "--set", f"train.steps={steps}")


def test_training_runs_read_back_from_the_server(stack, shapes, tmp_path):
    config = workflow_config(tmp_path, shapes, stack["mlflow"], "stack-train")
    runs = {v: tmp_path / "results" / "runs" / f"{v}-tiny" / "seed0" for v in ("clip", "argent")}
    for variant, out in runs.items():
        proc = train(config, variant, out)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "tracking disabled" not in proc.stderr, proc.stderr[-3000:]

    c = client(stack["mlflow"])
    exp = c.get_experiment_by_name("stack-train")
    found = c.search_runs([exp.experiment_id])
    print(f"runs read back from the MLflow server: {len(found)}")
    assert sorted(r.data.tags["variant"] for r in found) == ["argent", "clip"]
    for r in found:
        run_dir = runs[r.data.tags["variant"]]
        assert r.info.status == "FINISHED" and r.data.tags["argent_run_id"] == str(run_dir.resolve())
        assert r.data.params["train.steps"] == "4" and r.data.params["variant_name"] == r.data.tags["variant"]
        assert_run_matches_folder(c, r, run_dir)
        # Artifacts went through the server to its artifact root.
        names = {a.path for a in c.list_artifacts(r.info.run_id)}
        assert {"config.yaml", "summary.json"} <= names, names


def start_server(port: int, backend: str, artifacts: Path, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "1", "--backend-store-uri", backend, "--artifacts-destination", str(artifacts)],
                            env=child_env(), stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return proc
        except OSError:
            time.sleep(1)
    raise AssertionError(f"second mlflow server never answered:\n{log.read_text()[-2000:]}")


def logged(out: Path) -> bool:
    """The run has logged a metric: a fresh run writes into its staging folder until its first checkpoint."""
    folder = RunFolder(out)
    for metrics in (folder.staging.metrics, folder.metrics):
        try:
            if metrics.read_text().strip():
                return True
        except FileNotFoundError:  # not written yet, or just moved out of staging
            pass
    return False


def test_a_server_that_dies_mid_run_then_argent_track_resends(stack, shapes, tmp_path):
    # A second server on the same database: the one that dies. The stack's server stays up for re-sending.
    port = free_port()
    doomed = start_server(port, f"{stack['pg']}/mlflow", tmp_path / "artifacts", tmp_path / "doomed.log")
    config = workflow_config(tmp_path, shapes, f"http://127.0.0.1:{port}", "stack-outage")
    out = tmp_path / "results" / "runs" / "meru-tiny" / "seed0"
    steps = 24
    trainer = subprocess.Popen(argent_cmd("train", "--config", str(config), "--variant", "meru", "--size", "tiny",
                                          "--seed", "0", "--out", str(out), "--threads", "1",
                                          "--set", f"train.steps={steps}", "--set", "train.log_every=2"),
                               cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not logged(out):
        assert trainer.poll() is None and time.monotonic() < deadline, "training ended before the outage"
        time.sleep(0.2)
    os.killpg(doomed.pid, signal.SIGKILL)  # the server goes away mid-run
    doomed.wait()
    stdout, stderr = trainer.communicate(timeout=600)
    assert trainer.returncode == 0, stderr[-3000:]
    assert "MLflow tracking disabled" in stderr and "argent track" in stderr, stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["steps"] == steps
    assert max(json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()) == steps

    c = client(stack["mlflow"])
    exp = c.get_experiment_by_name("stack-outage")
    partial = c.search_runs([exp.experiment_id])
    assert len(partial) == 1, "the run started on the server that died"
    sent = {m.step for m in c.get_metric_history(partial[0].info.run_id, "loss")}
    assert max(sent, default=0) < steps, "the outage cut the run short on the server"

    proc = argent("track", "--run", str(out), "--uri", stack["mlflow"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = c.search_runs([exp.experiment_id])
    assert [r.info.run_id for r in again] == [partial[0].info.run_id], "re-send completes the same MLflow run"
    assert again[0].info.status == "FINISHED"
    assert_run_matches_folder(c, again[0], out)
