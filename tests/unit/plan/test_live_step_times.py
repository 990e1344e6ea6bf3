"""A finished training prices the next plan (issue 53): the plan reads the step times of the results
folder's own finished training jobs, with no `argent plan --record-from` first; a record file still wins."""

import json

import pytest
import yaml

from argent.config import WorkflowConfig, deep_merge
from argent.plan.cost import group_costs
from argent.plan.cost_report import summary_line
from argent.plan.groups import build_plan
from tests.fixtures import ROOT


def _cfg(results) -> dict:
    raw = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    raw["groups"] = {"main": {"variants": ["clip"], "seeds": [0, 1, 2]}}
    return deep_merge(raw, {"results": str(results), "tune": {"enabled": False}, "probe": {"enabled": False}})


def _finish(results, seed: int, wall: float, steps: int = 100) -> None:
    """A finished run of main/clip-tiny/seed<k> and its job record (wall seconds), as the workflow leaves them."""
    run = results / "runs" / "main" / "clip-tiny" / f"seed{seed}"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"size": "tiny", "train": {"steps": steps, "batch_size": 64,
                                                                               "device": "cpu"}}))
    (run / "summary.json").write_text("{}")
    tsv = results / "benchmarks" / "train" / "main" / f"clip-tiny-seed{seed}.tsv"
    tsv.parent.mkdir(parents=True, exist_ok=True)
    tsv.write_text(f"s\th:m:s\n{wall}\t0:00:30\n")


def test_a_finished_training_prices_the_next_plan_without_a_record(tmp_path):
    results = tmp_path / "results"
    cfg = _cfg(results)
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    assert "no estimate" in summary_line(group_costs(WorkflowConfig(cfg), plan, ROOT), plan)
    _finish(results, 0, 30.0)
    _finish(results, 1, 50.0)
    (cost,) = group_costs(WorkflowConfig(cfg), plan, ROOT)
    step = cost.step_time["tiny"]
    assert step.seconds == pytest.approx(0.4)  # the median of 0.3 and 0.5 s per step
    assert "measured from 2 finished training job(s)" in step.source and str(results) in step.source
    line = summary_line([cost], plan)
    assert "no estimate" not in line and "CPU-core-h" in line
    assert not (results / "bench").exists()  # nothing written: the plan reads, the record file is --record-from's


def test_a_record_file_wins_over_the_finished_jobs(tmp_path):
    results = tmp_path / "results"
    cfg = _cfg(results)
    _finish(results, 0, 30.0)
    record = {"machine": "gpu box", "source": "x", "sizes": {"tiny": {"step_seconds": 2.0, "batch_size": 64,
                                                                         "device": "cpu"}}}
    (results / "bench").mkdir()
    (results / "bench" / "step_times.json").write_text(json.dumps(record))
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert cost.step_time["tiny"].seconds == pytest.approx(2.0) and "gpu box" in cost.step_time["tiny"].source


def test_a_malformed_job_record_leaves_the_size_unknown_not_the_plan_failed(tmp_path):
    results = tmp_path / "results"
    cfg = _cfg(results)
    _finish(results, 0, 30.0)
    (results / "benchmarks" / "train" / "main" / "clip-tiny-seed0.tsv").write_text("s\th:m:s\n-5\tx\n")
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert cost.step_time["tiny"].seconds is None
