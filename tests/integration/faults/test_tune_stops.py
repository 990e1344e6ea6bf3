"""``argent tune`` stopped from outside (issue 45 items 1 and 3), real processes on a generated
hiershapes draw:

- a Ctrl-C (SIGINT to the worker's process group) in a trial's training: the training checkpoints
  the step it reached, the trial is failed and queued again at once (same parameters, a budget slot
  of its own), the worker exits 130 with one line; the next ``argent tune`` runs the retry and
  writes best.yaml. Before: two tracebacks, the trial FAIL and never retried (with ``n_trials: 1``
  no best.yaml, ever).
- a study store another process keeps locked: the worker waits ``tune.store_wait`` seconds, saying
  so, then stops with one line (before: nine tracebacks ending in Optuna's StorageInternalError).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml

from argent.engine.preemption import INTERRUPTED_EXIT
from argent.tuning.budget import retried_trial_number
from tests.fixtures import ROOT, train_and_validation_draws

STEPS = 30


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = train_and_validation_draws(tmp_path_factory.mktemp("tune_data"), train_scenes=16)
    shutil.copytree(root / "val" / "hierarcaps", root / "train" / "hierarcaps_val")  # the workflow's layout
    return root


def study_config(tmp: Path, data: Path, **tune) -> Path:
    hs = data / "train"
    cfg = {
        "results": str(tmp / "results"),
        "data": {"train_shards": str(hs / "train" / "shard-*.tar"), "min_box_area": 84},
        "optim": {"warmup_steps": 1},
        "train": {"batch_size": 8, "log_every": 1, "shuffle_buffer": 16},
        "tracking": {"enabled": False},
        "benchmarks": {
            "hs_zeroshot_val": {"protocol": "zeroshot", "split": "val", "root": str(hs / "classification_val"),
                                "taxonomy": str(hs / "classification_val" / "taxonomy.txt"), "templates": ["a {}"]}},
        "tune": {"study": "weights", "base_variant": "argent", "size": "tiny", "n_trials": 1,
                 "sampler": {"name": "random", "seed": 0}, "pruner": {"name": "none"},
                 "objective": [{"benchmark": "hs_zeroshot_val", "metric": "top1"}],
                 "train_overrides": [f"train.steps={STEPS}"], "report_every": STEPS, "heartbeat_interval": 5, **tune},
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def tune(config: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    return subprocess.Popen([sys.executable, "-m", "argent", "tune", "--config", str(config)], env=env, cwd=ROOT,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def wait_for(condition, proc: subprocess.Popen, what: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_ctrl_c_in_a_trial_requeues_it_and_the_next_worker_runs_it(tmp_path, data):
    config = study_config(tmp_path, data)
    out = tmp_path / "results" / "tune" / "weights"
    metrics = out / "trials" / "0" / "metrics.jsonl"
    worker = tune(config, start_new_session=True)  # a process group of its own: the test is its terminal
    wait_for(lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 2, worker, "trial 0 never trained")
    os.killpg(worker.pid, signal.SIGINT)
    _, err = worker.communicate(timeout=300)
    assert worker.returncode == INTERRUPTED_EXIT, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    (line,) = [x for x in err.splitlines() if x.startswith("argent tune: ")]
    assert "stopped on SIGINT in trial 0" in line and "queued again as trial 1" in line, line
    assert not (out / "best.yaml").exists()

    storage = f"sqlite:///{out / 'optuna.db'}"
    first, retry = optuna.load_study(study_name="weights", storage=storage).get_trials()
    assert first.state == optuna.trial.TrialState.FAIL and "SIGINT" in first.user_attrs["failure"]
    assert retry.state == optuna.trial.TrialState.WAITING and retried_trial_number(retry) == 0

    again = tune(config)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    first, retry = optuna.load_study(study_name="weights", storage=storage).get_trials()
    assert retry.state == optuna.trial.TrialState.COMPLETE and retry.params == first.params
    assert (out / "best.yaml").is_file()


def test_a_study_store_locked_by_another_process_waits_then_stops_with_one_line(tmp_path, data):
    config = study_config(tmp_path, data, store_wait=2)
    db = tmp_path / "results" / "tune" / "weights" / "optuna.db"
    db.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(120)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        worker = tune(config)
        _, err = worker.communicate(timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert worker.returncode == 2, err[-3000:]
    assert "Traceback" not in err and "StorageInternalError" not in err, err[-3000:]
    assert "locked by another process; waiting up to 2 s" in err, err[-3000:]
    (line,) = [x for x in err.splitlines() if x.startswith("argent tune: ")]
    assert str(db) in line and "tune.store_wait" in line, line
    assert time.monotonic() - started < 120, "stopped after store_wait, not when the holder let go"
