"""SIGKILL in the middle of a checkpoint write: the last good checkpoint survives, the temp file is
cleaned on the next start, and the resume finishes the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import torch

from argent.models.trained import load_model
from argent.runs import read_metrics
from tests.fixtures import ROOT, SCRIPTS, train_tiny

SCRIPT = SCRIPTS / "kill_during_save.py"


def test_sigkill_during_checkpoint_write_then_resume(tmp_path):
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(run)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    temp = list(run.glob(".checkpoint.*.pt"))
    assert len(temp) == 1  # the killed write's temp file
    assert torch.load(run / "checkpoint.pt", weights_only=True)["step"] == 2  # the last good one, intact
    assert not (run / "summary.json").exists()
    train_tiny(run, resume="strict", steps=4)
    assert not list(run.glob(".checkpoint.*.pt"))
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [1, 2, 3, 4]
    load_model(run)
