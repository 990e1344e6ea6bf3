"""The paper tables say when their runs come from more than one hardware class (each run records what it
ran on, outside its identity: issue 27 item 6, trained in tests/integration/engine/test_provenance.py)."""

import json
from pathlib import Path

from argent.config import WorkflowConfig
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.runs import run_dir
from argent.tables.paper import hardware_footnote
from argent.tables.run import hardware_note
from tests.fixtures import ROOT


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
    plan = build_plan(WorkflowConfig(merged_config(Path("config/config.yaml"), [], ROOT)), ROOT)
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
