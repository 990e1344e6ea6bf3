"""Preemption loses at most one step: the trainer alone, real signals (argent/engine/preemption.py).

A SIGUSR1 or SIGTERM between two periodic checkpoints makes the trainer checkpoint the step it
reaches, exit with its preempted status, and a resume end bit for bit where a run never stopped
ends; a second signal during the save does not tear the checkpoint; under DDP a signal to one rank
stops every rank at the same step; DataLoader workers survive the signal Slurm sends to the whole
job step.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from argent.engine.preemption import PREEMPTED_EXIT, StopRequest
from tests.fixtures import ROOT, SCRIPTS

SCRIPT = SCRIPTS / "train_run.py"
STEPS = 12


def run_script(*args: str, torchrun: int = 0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    launch = [sys.executable]
    if torchrun:
        launch += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(torchrun)]
    return subprocess.run([*launch, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, env=env)


def metrics(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("perf/")} for r in rows]


def same_weights(a: Path, b: Path) -> bool:
    x = torch.load(a / "checkpoint.pt", weights_only=True)["model"]
    y = torch.load(b / "checkpoint.pt", weights_only=True)["model"]
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The run never stopped (periodic checkpoints every 100 steps: only the final one is written)."""
    out = tmp_path_factory.mktemp("whole") / "run"
    proc = run_script(str(out), "argent", str(STEPS), "--checkpoint-every", "100")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.parametrize("sig", ["USR1", "TERM"])
def test_a_signal_between_checkpoints_checkpoints_the_next_step_and_resumes_bit_for_bit(whole, tmp_path, sig):
    run = tmp_path / "run"
    stopped = run_script(str(run), "argent", str(STEPS), "--checkpoint-every", "100", "--signal-at", "6",
                         "--signal", sig)
    assert stopped.returncode == PREEMPTED_EXIT, stopped.stderr[-3000:]
    # The signal came during step 6 (0-based): that step finishes, step 7 is checkpointed, nothing is lost.
    assert torch.load(run / "checkpoint.pt", weights_only=True)["step"] == 7
    assert f"SIG{sig} received" in stopped.stderr and "at step 7 of 12" in stopped.stderr
    assert not (run / "summary.json").exists()
    resumed = run_script(str(run), "argent", str(STEPS), "--checkpoint-every", "100", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at step 7" in resumed.stderr
    assert same_weights(run, whole)
    assert metrics(run) == metrics(whole)


def test_a_second_signal_during_the_save_does_not_tear_the_checkpoint(whole, tmp_path):
    run = tmp_path / "run"
    stopped = run_script(str(run), "argent", str(STEPS), "--checkpoint-every", "100", "--signal-at", "3",
                         "--again-in-save")
    assert stopped.returncode == PREEMPTED_EXIT, stopped.stderr[-3000:]
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    assert state["step"] == 4
    assert not list(run.glob(".checkpoint.*")), "no temp file left behind"
    resumed = run_script(str(run), "argent", str(STEPS), "--checkpoint-every", "100", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert same_weights(run, whole) and metrics(run) == metrics(whole)


def test_a_signal_to_one_ddp_rank_stops_every_rank_at_the_same_step(tmp_path):
    run = tmp_path / "run"
    proc = run_script(str(run), "clip", "8", "--checkpoint-every", "100", "--signal-at", "2", "--only-rank", "1",
                      torchrun=2)
    assert proc.returncode != 0  # torchrun reports its ranks' preempted exit as a failure: the retry resumes
    assert proc.stderr.count("preempted: stopped on") == 2, proc.stderr[-3000:]  # both ranks, one signal
    # Signalled during step 2: the flags reduced at the boundary after it are read one boundary later.
    assert proc.stderr.count("at step 4 of 8") == 2
    assert torch.load(run / "checkpoint.pt", weights_only=True)["step"] == 4


def test_signals_are_recorded_only_while_listening_and_handlers_are_put_back():
    before = signal.getsignal(signal.SIGUSR1)
    stop = StopRequest()
    stop.listen()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert stop.agreed(torch.device("cpu"), world_size=1) and stop.received == "SIGUSR1"
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGUSR1) is before


@pytest.mark.parametrize("sig", ["SIGUSR1", "SIGTERM"])
def test_loader_workers_survive_the_signal_slurm_sends_to_the_whole_step(sig):
    """Slurm signals every process of the job step; a loader worker killed by it fails the main process
    before its checkpoint. The trainer's loader workers ignore the stop signals (quiet_worker)."""
    code = (
        "import os, signal, sys, time\n"
        "import torch\n"
        "from torch.utils.data import DataLoader, IterableDataset\n"
        "from argent.engine.preemption import quiet_worker\n"
        "class Count(IterableDataset):\n"
        "    def __iter__(self):\n"
        "        i = 0\n"
        "        while True:\n"
        "            time.sleep(0.01); yield torch.tensor(i); i += 1\n"
        "init = quiet_worker if sys.argv[1] == 'quiet' else None\n"
        "sig = getattr(signal, sys.argv[2])\n"
        "it = iter(DataLoader(Count(), batch_size=None, num_workers=1, worker_init_fn=init))\n"
        "signal.signal(sig, lambda *a: None)  # the trainer's main process records it (after its workers start)\n"
        "next(it); time.sleep(1.0)\n"
        "os.killpg(os.getpgid(0), sig)  # as slurmstepd signals the step's processes\n"
        "time.sleep(1.0)\n"
        "print(sum(int(next(it)) >= 0 for _ in range(20)))\n"
        "del it  # the trainer drops its loader: workers shut down in order\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    results = {}
    for mode in ("quiet", "default"):
        results[mode] = subprocess.run([sys.executable, "-c", code, mode, sig], capture_output=True, text=True,
                                       timeout=120, env=env, start_new_session=True)  # a process group of its own
    assert results["quiet"].returncode == 0 and results["quiet"].stdout.strip() == "20", results["quiet"].stderr
    # The control: without it the worker dies of the signal, so this test can fail.
    assert results["default"].returncode != 0 and "DataLoader worker" in results["default"].stderr, results["default"]
