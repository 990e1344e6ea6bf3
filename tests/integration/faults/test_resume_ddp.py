"""Under DDP, ``--resume auto`` with a corrupt checkpoint: rank 0 decides (and moves the file aside),
every rank follows the same decision; ``--resume strict`` stops every rank with rank 0's message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from argent.models.trained import load_model
from tests.fixtures import ROOT, SCRIPTS, checksums


def run_two_ranks(out: Path, mode: str) -> tuple[subprocess.CompletedProcess, dict[int, dict]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(SCRIPTS / "resume_ddp.py"), str(out), mode]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    reports = {r: json.loads(p.read_text()) for r in (0, 1) if (p := out.parent / f"rank{r}.json").exists()}
    return proc, reports


def tear(run: Path) -> bytes:
    ckpt = run / "checkpoint.pt"
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    return ckpt.read_bytes()


def test_resume_auto_with_a_corrupt_checkpoint_every_rank_starts_fresh(finished_run):
    torn = tear(finished_run)
    proc, reports = run_two_ranks(finished_run, "auto")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert reports == {0: {"first_step": 0, "steps": 2}, 1: {"first_step": 0, "steps": 2}}
    aside = list(finished_run.glob("checkpoint.pt.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == torn  # moved once, by rank 0, and kept
    assert "training from scratch" in proc.stderr
    load_model(finished_run)  # the fresh run's checkpoint is whole and matches its config
    assert (finished_run / "summary.json").exists() and not (finished_run / ".staging").exists()


def test_resume_strict_with_a_corrupt_checkpoint_stops_every_rank(finished_run):
    tear(finished_run)
    before = checksums(finished_run)
    proc, reports = run_two_ranks(finished_run, "strict")
    assert proc.returncode != 0
    ckpt = str(finished_run / "checkpoint.pt")
    assert set(reports) == {0, 1}, proc.stderr[-3000:]  # both ranks stopped with a message; none hung
    assert ckpt in reports[0]["error"] and "unreadable" in reports[0]["error"]
    assert ckpt in reports[1]["error"] and "decided by rank 0" in reports[1]["error"]
    assert checksums(finished_run) == before  # strict moves nothing
