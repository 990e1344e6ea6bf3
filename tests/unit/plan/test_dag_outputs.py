"""What the DAG makes for the tables and what it cleans (argent/plan/dag.py): a data set is cleaned only
when a benchmark that runs (or the study) reads it, the tables job's outputs are the tables the config
can fill, and the per-run figures folder is an output only when an evaluation draws figures."""

from __future__ import annotations

import copy

import pytest

from argent.config import load_config
from argent.plan.dag import build_dag
from tests.fixtures import ROOT, SHARED


def _dag(name: str, *overrides: str):
    cfg = load_config(ROOT / "config" / name, list(overrides), base_dir=ROOT).raw
    cfg["negatives"]["wordnet_zip"] = str(ROOT / "pyproject.toml")  # a file that exists: the negatives group runs
    return build_dag(cfg, ROOT)


def test_the_quick_config_cleans_only_the_split_it_evaluates():
    dag = _dag("quick.yaml")
    assert dag.cleaned_datasets() == ["hiershapes"]  # not the real HierarCaps, not the study's validation split
    assert [p for p in dag.table_extras() if p.endswith("table1.md")] == [dag.r("data", "hiershapes", "table1.md")]


@pytest.mark.skipif(not (SHARED / "hierarcaps").is_dir(), reason="../shared/data/hierarcaps absent")
def test_the_smoke_config_cleans_what_its_benchmarks_and_its_study_read():
    assert _dag("smoke.yaml").cleaned_datasets() == ["hierarcaps", "hiershapes", "hiershapes_val"]


def test_the_tables_outputs_and_their_lines():
    quick = _dag("quick.yaml")
    assert quick.tables.written == ("main", "mechanism", "cost")
    assert [line for line in quick.notes if line.startswith("argent tables: no ")] == quick.tables.lines()
    assert len(quick.tables.lines()) == 3
    smoke = _dag("smoke.yaml")  # tables.claims.min_paired_seeds: 1, the probe on: every table
    assert smoke.tables.written == ("claims", "main", "ablations", "mechanism", "probe", "cost")


def test_the_run_figures_are_an_output_only_when_an_analysis_benchmark_runs():
    dag = _dag("quick.yaml")
    assert dag.run_figures()  # hs_analysis
    cfg = copy.deepcopy(dag.config)
    cfg["evaluate"]["benchmarks"] = ["hs_zeroshot"]
    assert not build_dag(cfg, ROOT).run_figures()
