"""Each run records what it ran on, outside its identity (issue 27 item 6); the paper tables say when
their runs come from more than one hardware class."""

import json
import sys
from pathlib import Path

import torch

from argent.config import IDENTITY_VERSION, experiment_from_dict
from argent.engine.trainer import train
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.layout import run_dir
from argent.runs import hardware_class, hardware_classes, read_provenance
from argent.tables.paper import hardware_footnote
from argent.tables.run import hardware_note

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "scripts"))
from batches import stream  # noqa: E402


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


def test_the_footnote_names_the_classes_only_when_mixed():
    assert hardware_footnote({}) == "" and hardware_footnote({"CPU AVX2, no GPU, torch 2": ["a", "b"]}) == ""
    note = hardware_footnote({"CPU AVX2, no GPU, torch 2": ["a", "b"], "CPU AVX512, no GPU, torch 2": ["c"]})
    assert note.count("\n") == 1 and "CPU AVX2, no GPU, torch 2 (2 runs)" in note and "AVX512" in note
    assert "bit for bit" in note


def _finished(results: Path, group: str, variant: str, seed: int, record: dict | None) -> None:
    folder = run_dir(results, group, variant, "tiny", seed)
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text("{}")
    if record is not None:
        (folder / "provenance.json").write_text(json.dumps(record))


def test_the_main_table_note_reads_each_runs_provenance(tmp_path):
    plan = build_plan(merged_config(Path("config/config.yaml"), [], ROOT), ROOT)
    here = {"torch": "2.9", "cpu_capability": "AVX2", "gpu": ""}
    _finished(tmp_path, "main", "clip", 0, here)
    _finished(tmp_path, "main", "clip", 1, here)
    main_rows = ["main/clip", "main/meru"]
    assert hardware_note(tmp_path, plan, main_rows) == ""  # one class: no line
    _finished(tmp_path, "main", "meru", 0, {**here, "cpu_capability": "AVX512"})
    note = hardware_note(tmp_path, plan, main_rows)
    assert "CPU AVX2, no GPU, torch 2.9 (2 runs)" in note and "CPU AVX512, no GPU, torch 2.9 (1 run)" in note
    # a borrowed run (ablations/meru is main's) counts once, under the group that trained it
    assert hardware_note(tmp_path, plan, ["ablations/meru", "main/meru"]) == ""
