"""Ctrl-C is a preemption (issue 45 item 1): SIGINT to ``argent train`` mid-run, sent as a terminal
sends it (to the whole foreground process group: the trainer and its DataLoader worker), checkpoints
the step reached and exits 130 with one line; ``--resume`` continues at that step. Before: a
KeyboardInterrupt traceback, and every step since the last periodic checkpoint lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from argent.engine.preemption import INTERRUPTED_EXIT
from tests.fixtures import ROOT, bad_shard, write_config


def steps_logged(run: Path) -> list[int]:
    path = run / "metrics.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["step"] for line in lines if line.endswith("}")]


def ctrl_c_after(run: Path, args: list[str], past_step: int) -> tuple[subprocess.CompletedProcess, int]:
    """Start ``argent train`` in a process group of its own; once it has logged a step past
    ``past_step``, SIGINT the group, as a Ctrl-C does. Returns the process and the step seen last."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.Popen([sys.executable, "-m", "argent", "train", *args], env=env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 300
    while not [s for s in steps_logged(run) if s > past_step]:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no step logged"
        time.sleep(0.05)
    seen = steps_logged(run)[-1]
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


def test_ctrl_c_checkpoints_the_step_reached_exits_130_with_one_line_and_resumes_there(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    bad_shard(shards / "shard-000000.tar", good=16)
    # 5000 steps, a periodic checkpoint only at 2500: every step reached is one a kill would lose.
    config = write_config(tmp_path / "config.yaml",
                          train={"steps": 5000, "batch_size": 4, "shuffle_buffer": 1, "checkpoint_every": 2500,
                                 "diagnostics_every": 2500, "num_workers": 1},
                          data={"train_shards": str(shards / "shard-*.tar"), "format": "plain", "augment": False})
    run = tmp_path / "run"
    args = ["--config", str(config), "--no-default", "--variant", "meru", "--size", "tiny", "--out", str(run)]

    stopped, seen = ctrl_c_after(run, args, past_step=2)
    assert stopped.returncode == INTERRUPTED_EXIT, stopped.stderr[-3000:]
    err = stopped.stderr
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert "DataLoader worker" not in err, err[-3000:]  # the worker ignored the group's SIGINT
    step = torch.load(run / "checkpoint.pt", weights_only=True)["step"]
    assert step >= seen and steps_logged(run)[-1] == step  # nothing trained after the checkpoint, nothing lost
    (line,) = [x for x in err.splitlines() if x.startswith("argent train: stopped on SIGINT")]
    assert f"at step {step} of 5000" in line and "--resume" in line, line
    assert not list(run.glob(".checkpoint.*")) and not (run / "summary.json").exists()

    resumed, _ = ctrl_c_after(run, [*args, "--resume"], past_step=step)
    assert resumed.returncode == INTERRUPTED_EXIT, resumed.stderr[-3000:]
    assert f"at step {step}" in resumed.stderr, resumed.stderr[-3000:]
    logged = steps_logged(run)
    assert logged == list(range(1, logged[-1] + 1)), "the resume continued at the step checkpointed"
