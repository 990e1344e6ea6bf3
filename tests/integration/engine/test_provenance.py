"""A training run records what it ran on, outside its identity (issue 27 item 6), and a resume on
another machine keeps both records (tests/unit/core/test_run_provenance.py: the tables' side)."""

import json

import torch

from argent.config import IDENTITY_VERSION, experiment_from_dict
from argent.engine.trainer import train
from argent.runs import hardware_class, hardware_classes, read_provenance
from tests.fixtures import ROOT, stream


def tiny_cfg(steps: int):
    return experiment_from_dict(
        {"train": {"steps": steps, "batch_size": 8, "log_every": 2, "checkpoint_every": 2},
         "optim": {"warmup_steps": 2}, "tracking": {"enabled": False}}, "clip", "tiny", 0, base_dir=ROOT)


def test_a_run_records_its_hardware_outside_its_identity(tmp_path):
    run = tmp_path / "run"
    train(tiny_cfg(2), run, batches=stream)
    record = read_provenance(run)
    assert record["torch"] == torch.__version__
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert record["gpu"] == "" and record["threads"] == torch.get_num_threads()
    assert record["blas"].startswith("BLAS ") and "LAPACK" in record["blas"]
    assert record["deterministic_algorithms"] is False and record["python"] and record["machine"]
    assert record["hardware_class"] == hardware_class(record) and "earlier" not in record
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    assert state["identity_version"] == IDENTITY_VERSION and state["provenance"] == [record]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["identity_version"] == IDENTITY_VERSION and "provenance" not in summary
    assert read_provenance(tmp_path / "none") is None and hardware_classes(None) == ["not recorded"]


def test_a_run_resumed_on_another_machine_keeps_both_records(tmp_path):
    run = tmp_path / "run"
    train(tiny_cfg(2), run, batches=stream)
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    here = state["provenance"][0]["cpu_capability"]
    other = next(c for c in ("AVX2", "AVX512", "DEFAULT") if c != here)   # differs from whatever this host is
    elsewhere = {**state["provenance"][0], "cpu_capability": other, "hardware_class": "elsewhere"}
    torch.save({**state, "provenance": [elsewhere]}, run / "checkpoint.pt")
    (run / "summary.json").unlink()
    train(tiny_cfg(2), run, resume="strict", batches=stream)  # the finishing segment, on this machine
    record = read_provenance(run)
    assert record["earlier"] == [elsewhere]
    assert len(hardware_classes(record)) == 2 and any(other in c for c in hardware_classes(record))
