"""`argent plan` on a machine without the config's data: it costs the plan and names the data in one
line (the DAG build still refuses); a step-time record of a results folder beside the config's is
offered by name; a missing --config is a usage error with the verb's name once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argent.cli import main as argent_main
from argent.config import ConfigError, WorkflowConfig
from argent.plan.cost import group_costs
from argent.plan.groups import build_plan
from argent.plan.step_record import RECORD
from tests.fixtures import ROOT


def _cfg(results: Path, **groups) -> dict:
    return {"variants_file": str(ROOT / "config" / "variants.yaml"), "results": str(results),
            "runs": {"sizes": ["tiny"], "seeds": [0]}, "train": {"steps": 100, "batch_size": 8, "device": "cpu"},
            "optim": {"warmup_steps": 10}, "negatives": {"wordnet_zip": "/nowhere/wordnet.zip"},
            "groups": groups or {"main": {"variants": ["clip"]}}}


def test_plan_costs_the_paper_config_without_its_data(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    absent = f"negatives.wordnet_zip={tmp_path / 'wordnet.zip'}"
    assert argent_main(["plan", "--config", "config/paper.yaml", "--base-dir", str(ROOT), "--set", absent]) == 0
    out = capsys.readouterr().out.splitlines()
    unseen = [line for line in out if "data not seen here" in line]
    assert len(unseen) == 1 and out[out.index(unseen[0]) + 1].startswith("  groups.negatives: ")
    assert "negatives.wordnet_zip" in out[out.index(unseen[0]) + 1]
    assert any(line.startswith("negatives: 3 runs trained") for line in out)
    assert "29 training runs" in out[-1]


def test_only_the_cost_plans_without_data_the_dag_still_refuses(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path / "results", main={"variants": ["argent"]}, negs={"variants": ["argent_negs_random"]})
    with pytest.raises(ConfigError, match="groups.negs: argent_negs_random .*WordNet"):
        build_plan(WorkflowConfig(cfg), ROOT)
    plan = build_plan(WorkflowConfig(cfg), ROOT, without_data=True)
    assert "negs" in plan.configs and [g for g, _ in plan.unseen] == ["negs"]
    cfg["groups"]["negs"]["optional"] = True  # an optional group is left out as the DAG leaves it out
    plan = build_plan(WorkflowConfig(cfg), ROOT, without_data=True)
    assert plan.unseen == [] and [g for g, _ in plan.left_out] == ["negs"]


def write_record(results: Path, size: str, device: str) -> Path:
    path = results / RECORD
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"machine": "box", "source": str(results),
                                "sizes": {size: {"step_seconds": 0.4, "batch_size": 8, "device": device}}}))
    return path


def test_a_record_of_another_results_folder_is_named_not_used(tmp_path: Path) -> None:
    write_record(tmp_path / "results" / "quick", "tiny", "cpu")  # argent plan --record-from results/quick
    cfg = _cfg(tmp_path / "results")
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), tmp_path), tmp_path)
    step = cost.step_time["tiny"]
    assert step.seconds is None
    assert "--set cost.step_times=results/quick/bench/step_times.json" in step.source and "box" in step.source
    # read when the config points at it
    cfg["cost"] = {"step_times": "results/quick/bench/step_times.json"}
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), tmp_path), tmp_path)
    assert cost.step_time["tiny"].seconds == pytest.approx(0.4)
    # another size, or another device kind, is not offered
    cfg = _cfg(tmp_path / "results", main={"variants": ["clip"], "sizes": ["S"]})
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), tmp_path), tmp_path)
    assert "step_times" not in cost.step_time["S"].source


def test_plan_without_config_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        argent_main(["plan"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "argent plan: error: --config FILE is required" in err
    assert "argent plan: argent plan" not in err
