"""Training engine: exact resume after SIGKILL, the NaN guard, config-mismatch refusal, tracking."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from argent.config import experiment_from_dict
from argent.engine.step import TrainingDiverged
from argent.engine.trainer import train
from argent.runs import ResumeMismatch
from tests.fixtures import ROOT, SCRIPTS, stream

SCRIPT = SCRIPTS / "train_run.py"


def run_script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, env=env)


def reproducible(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("perf/")} for r in rows]


def tiny_cfg(variant="argent", steps=6, **train):
    return experiment_from_dict(
        {"train": {"steps": steps, "batch_size": 8, "log_every": 2, "checkpoint_every": 2, **train},
         "optim": {"warmup_steps": 2}, "tracking": {"enabled": False}}, variant, "tiny", 0, base_dir=ROOT)


def test_sigkilled_run_resumes_to_the_same_weights_and_metrics(tmp_path):
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert run_script(str(whole), "argent", "14").returncode == 0
    killed = run_script(str(broken), "argent", "14", "--kill-at", "12")
    assert killed.returncode == -9  # really killed, mid-training, after the step-10 checkpoint
    assert not (broken / "summary.json").exists()
    resumed = run_script(str(broken), "argent", "14", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a = torch.load(whole / "checkpoint.pt", weights_only=True)
    b = torch.load(broken / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 14
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    assert reproducible(whole / "metrics.jsonl") == reproducible(broken / "metrics.jsonl")


def test_resume_refuses_a_checkpoint_from_another_config(tmp_path):
    train(tiny_cfg(steps=2), tmp_path / "run", batches=stream)
    changed = tiny_cfg(steps=2)
    changed.variant.huber_beta = 0.5
    with pytest.raises(ResumeMismatch, match="config hash"):
        train(changed, tmp_path / "run", resume="strict", batches=stream)


def test_nan_batch_stops_with_step_term_and_checkpoint_and_keeps_the_checkpoint(tmp_path):
    def poison(step, batch):
        if step == 4:
            batch = dict(batch, image=torch.full_like(batch["image"], float("nan")))
        return batch

    with pytest.raises(TrainingDiverged) as err:
        train(tiny_cfg(), tmp_path / "run", batches=stream, batch_hook=poison)
    msg = str(err.value)
    assert "step 4" in msg and "contrastive" in msg and "checkpoint.pt (step 4)" in msg
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert state["step"] == 4 and all(torch.isfinite(t).all() for t in state["model"].values())
    assert not (tmp_path / "run" / "summary.json").exists()


def test_nan_policy_skip_counts_skipped_steps(tmp_path):
    def poison(step, batch):
        return dict(batch, text=batch["text"], image=batch["image"] * float("nan")) if step == 3 else batch

    summary = train(tiny_cfg(nan_policy="skip"), tmp_path / "run", batches=stream, batch_hook=poison)
    assert summary["skipped_steps"] == 1 and summary["steps"] == 6


def test_tracking_mirrors_params_metrics_and_artifacts(tmp_path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = tiny_cfg(variant="meru", steps=4)
    cfg.tracking.uri, cfg.tracking.experiment, cfg.tracking.enabled = uri, "unit", True
    train(cfg, tmp_path / "runs" / "meru-tiny" / "seed0", batches=stream)
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("unit").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["variant"] == "meru" and run.data.tags["seed"] == "0"
    assert run.data.params["variant.entailment"] == "cone"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [2, 4]
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "summary.json"} <= arts
    assert run.info.status == "FINISHED"


def test_unreachable_tracking_does_not_fail_training(tmp_path):
    cfg = tiny_cfg(steps=2)
    cfg.tracking.uri, cfg.tracking.enabled = "http://127.0.0.1:9", True  # discard port: nothing listens
    summary = train(cfg, tmp_path / "run", batches=stream)
    assert summary["steps"] == 2
    assert (tmp_path / "run" / "summary.json").exists()
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1


def test_track_command_resends_a_finished_run(tmp_path):
    import mlflow

    from argent.tracking.cli import main as track_main

    run_dir = tmp_path / "results" / "runs" / "clip-tiny" / "seed0"
    train(tiny_cfg(variant="clip", steps=4), run_dir, batches=stream)  # tracking disabled while training
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert track_main(["--run", str(run_dir), "--uri", uri]) == 0
    assert track_main(["--run", str(run_dir), "--uri", uri]) == 0  # idempotent: same MLflow run, no duplicates
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1
    assert [m.step for m in client.get_metric_history(runs[0].info.run_id, "loss")] == [2, 4]


def test_trainer_logs_the_data_wait_share(tmp_path):
    cfg = experiment_from_dict({"train": {"steps": 4, "batch_size": 8, "log_every": 2, "checkpoint_every": 100},
                                "optim": {"warmup_steps": 1}, "tracking": {"enabled": False}},
                               "clip", "tiny", 0, base_dir=ROOT)
    train(cfg, tmp_path / "run", batches=stream)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4]
    for r in rows:
        assert 0.0 <= r["perf/data_wait"] < 1.0
