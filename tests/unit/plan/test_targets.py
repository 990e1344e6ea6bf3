"""argent/plan/targets.py: the workflow's decisions (which benchmarks run, what they read, which parquet
is mined from which shards, which runs the probe reads), each rule and each message, without Snakemake.
The Snakefile's answers equal these (tests/integration/workflow/test_smoke.py runs the DAG they build)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from argent.config import ConfigError, WorkflowConfig, load_config
from argent.config.groups import RunKey
from argent.plan.groups import build_plan
from argent.plan.targets import benchmark_data_inputs, choose_benchmarks, mining_jobs, probe_runs
from tests.fixtures import ROOT


@pytest.fixture(scope="module")
def smoke() -> dict:
    """The smoke workflow config as Snakemake reads it (derived paths filled in), with a WordNet zip that
    exists (the negatives group checks the file is there, nothing more)."""
    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    cfg["negatives"]["wordnet_zip"] = str(ROOT / "pyproject.toml")
    return cfg


def test_benchmarks_made_by_the_dag_run_and_absent_optional_ones_are_one_line(smoke, tmp_path):
    cfg = copy.deepcopy(smoke)
    # optional: true; absent whether or not ../shared is there (the first absent path, in the entry's
    # field order, is named: the items file before the images)
    cfg["benchmarks"]["hierarcaps_pep"].update(hierarcaps_csv=str(tmp_path / "absent.csv"),
                                               image_dir=str(tmp_path / "absent-images"))
    choice = choose_benchmarks(WorkflowConfig(cfg), ROOT)
    assert "hs_zeroshot" in choice.run and "hierarcaps_pep" not in choice.run  # hs_*: under hiershapes.out
    assert choice.skipped["hierarcaps_pep"] == (f"skipping optional benchmark hierarcaps_pep: "
                                                 f"benchmarks.hierarcaps_pep.hierarcaps_csv: {tmp_path / 'absent.csv'} not found")
    assert sorted(choice.run + list(choice.skipped)) == sorted(cfg["evaluate"]["benchmarks"])  # each, once
    assert choice.run == [b for b in cfg["evaluate"]["benchmarks"] if b in choice.run]  # in the config's order


def test_a_required_benchmark_without_its_data_is_named_with_its_path(smoke, tmp_path):
    cfg = copy.deepcopy(smoke)
    cfg["benchmarks"]["hierarcaps_pep"].update(optional=False, hierarcaps_csv=str(tmp_path / "absent.csv"),
                                               image_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"benchmarks\.hierarcaps_pep\.hierarcaps_csv: .*absent\.csv: not found"):
        choose_benchmarks(WorkflowConfig(cfg), ROOT)


def test_an_undefined_benchmark_is_named(smoke):
    cfg = copy.deepcopy(smoke)
    cfg["evaluate"]["benchmarks"] = ["hs_zeroshot", "imagenet_typo"]
    with pytest.raises(ConfigError, match=r"evaluate.benchmarks: \['imagenet_typo'\] not defined"):
        choose_benchmarks(WorkflowConfig(cfg), ROOT)


def test_what_the_benchmarks_read_that_the_dag_makes(smoke):
    made = benchmark_data_inputs(WorkflowConfig(smoke), ["hs_zeroshot", "hs_pep"], "data/smoke/hiershapes", "MANIFEST")
    assert made == sorted(["MANIFEST", "results/smoke/data/hiershapes/hierarcaps_clean.csv",
                           "results/smoke/data/hiershapes/negative_pool.csv"])
    assert benchmark_data_inputs(WorkflowConfig(smoke), ["sugarcrepe"], "data/smoke/hiershapes", "MANIFEST") == []  # real data


def test_one_parquet_is_mined_from_one_set_of_shards(smoke):
    plan = build_plan(WorkflowConfig(smoke), ROOT)
    assert mining_jobs(plan, ROOT) == {"results/smoke/data/negatives/hiershapes_train.parquet":
                                       "data/smoke/hiershapes/train/shard-*.tar"}
    cfg = copy.deepcopy(smoke)
    cfg["groups"]["negatives"]["overrides"] = {"data": {"train_shards": "elsewhere/shard-*.tar"}}
    cfg["groups"]["more"] = {"variants": ["argent_negs_random"]}  # the default data, the same parquet
    with pytest.raises(ConfigError, match=r"data.negatives results/smoke/data/negatives/hiershapes_train.parquet: "
                                          r"mined from two different data.train_shards"):
        mining_jobs(build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    cfg = copy.deepcopy(smoke)
    cfg["groups"]["negatives"]["overrides"] = {"data": {"negatives": ""}}
    with pytest.raises(ConfigError, match="groups.negatives: its variants train on hard negatives but data.negatives is empty"):
        mining_jobs(build_plan(WorkflowConfig(cfg), ROOT), ROOT)


def test_the_probe_reads_each_run_where_it_lives(smoke):
    cfg = copy.deepcopy(smoke)
    cfg["probe"]["variants"] = ["argent", "ablations/meru"]  # ablations borrows meru from main
    runs = probe_runs(WorkflowConfig(cfg).probe, build_plan(WorkflowConfig(cfg), ROOT), Path(cfg["results"]))
    assert runs == {"results/smoke/probe/main/argent-tiny/seed0.json": RunKey("main", "argent", "tiny", 0),
                    "results/smoke/probe/main/meru-tiny/seed0.json": RunKey("main", "meru", "tiny", 0)}
    assert probe_runs(WorkflowConfig({**cfg, "probe": {**cfg["probe"], "enabled": False}}).probe, build_plan(WorkflowConfig(cfg), ROOT),
                      Path(cfg["results"])) == {}


@pytest.mark.parametrize("probe, message", [
    ({"variants": ["nosuch/argent"]}, "probe.variants: 'nosuch/argent': group 'nosuch' is not an active group"),
    ({"variants": ["argent"], "seeds": [7]}, "probe: main/argent-tiny/seed7 is not a run of group main"),
    ({"variants": ["argent"], "seeds": []}, "probe.seeds: the seeds of the runs to probe are missing"),
])
def test_a_probe_of_a_run_the_plan_does_not_train_is_named(smoke, probe, message):
    cfg = copy.deepcopy(smoke)
    cfg["probe"].update(probe)
    with pytest.raises(ConfigError) as info:
        probe_runs(WorkflowConfig(cfg).probe, build_plan(WorkflowConfig(cfg), ROOT), Path(cfg["results"]))
    assert message in str(info.value)
