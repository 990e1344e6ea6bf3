"""argent/plan/dag.py: what every rule reads, writes and depends on, answered without Snakemake.
The Snakefile's rules only adapt these answers (workflow/rules/common.smk); tests/integration/workflow/test_smoke.py
runs the DAG they build."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError, load_config
from argent.config.groups import TUNED_VARIANT, RunKey, read_planned_runs, run_identity, tuned_study
from argent.io import write_text_if_changed
from argent.plan.dag import build_dag, file_digest, stable_hash
from argent.runs import Results, is_under
from tests.fixtures import ROOT


@pytest.fixture(scope="module")
def smoke() -> dict:
    """The smoke workflow config as Snakemake reads it (derived paths filled in), with a WordNet zip that exists."""
    cfg = load_config(ROOT / "config" / "smoke.yaml", base_dir=ROOT).raw
    cfg["negatives"]["wordnet_zip"] = str(ROOT / "pyproject.toml")
    return cfg


@pytest.fixture(scope="module")
def dag(smoke):
    return build_dag(smoke, ROOT)


def test_runs_their_hashes_and_resources(dag, smoke):
    results = Path(smoke["results"])
    key = next(k for k in dag.plan.trained if k.variant == "argent")
    assert dag.run_dir(key) == str(results / "runs" / key.group / f"argent-{key.size}" / f"seed{key.seed}")
    assert dag.summaries() == [str(Path(dag.run_dir(k)) / "summary.json") for k in dag.plan.trained]
    assert dag.run_hash(key) == run_identity(dag.plan.configs[key.group], key, ROOT)
    assert dag.launcher(key.group) == ["argent"]
    with pytest.raises(ConfigError, match=r"config for run .*nosuch.*: variant 'nosuch' not in the catalogue"):
        dag.run_hash(RunKey(key.group, "nosuch", key.size, 0))


def test_several_gpus_launch_torchrun(smoke):
    cfg = copy.deepcopy(smoke)
    cfg["runs"]["gpus"] = 2
    assert build_dag(cfg, ROOT).launcher("main")[:3] == ["torchrun", "--standalone", "--nproc_per_node"]


def test_training_waits_for_generated_data_and_mined_negatives(dag, smoke):
    manifest = str(Path(smoke["hiershapes"]["out"]) / "manifest.json")
    assert dag.training_inputs("main", "argent") == [manifest]
    negatives_group = next(g for g in dag.plan.configs if g == "negatives")
    parquet = dag.plan.configs[negatives_group]["data"]["negatives"]
    assert dag.training_inputs(negatives_group, "argent_negs_cement") == [manifest, parquet]
    assert dag.mining == {parquet: dag.plan.configs[negatives_group]["data"]["train_shards"]}
    assert dag.synth_inputs("/elsewhere/shard-{000..003}.tar") == []


def test_evaluations_read_the_run_and_what_the_dag_makes_for_their_benchmarks(dag, smoke):
    key = dag.plan.trained[0]
    inputs = dag.evaluation_inputs(key)
    assert str(Path(dag.run_dir(key)) / "summary.json") in inputs and dag.hiershapes_manifest in inputs
    assert inputs == sorted(set(inputs))
    assert len(dag.eval_targets()) == len(dag.plan.trained) * len(dag.benchmarks.run)
    assert dag.evaluation_hash() == stable_hash({b: smoke["benchmarks"][b] for b in dag.benchmarks.run})


def test_the_config_files_the_verbs_read(dag, smoke, tmp_path):
    files = dag.files()
    effective = yaml.safe_load(files[dag.effective_config])
    assert effective["variants_file"] == str(ROOT / smoke["variants_file"])
    assert {dag.group_config(g) for g in dag.plan.configs} <= set(files)
    assert yaml.safe_load(files[dag.r("params", "hiershapes.yaml")]) == smoke["hiershapes"].get("params", {})
    # written only when the text changes: an unchanged file keeps its timestamp
    path = tmp_path / "workflow_config.yaml"
    assert write_text_if_changed(path, files[dag.effective_config])
    stamp = path.stat().st_mtime_ns
    assert not write_text_if_changed(path, files[dag.effective_config]) and path.stat().st_mtime_ns == stamp


def test_the_planned_identities_are_handed_to_the_verbs_beside_the_effective_config(dag, smoke, tmp_path):
    """``argent evaluate`` of the workflow reads the planned hash of a run from here, not from the plan rebuilt:
    every run trained at home with its train job's hash (a borrowed run under its lender only; a tuned run whose
    study has not written best.yaml, null)."""
    path = tmp_path / "planned_runs.json"
    path.write_text(dag.files()[str(dag.results.planned_runs)])
    planned = read_planned_runs(path)
    assert set(planned) == {str(k) for k in dag.plan.trained}
    assert len(dag.plan.trained) < len(dag.plan.home)  # the smoke config borrows: those are not listed
    for key in dag.plan.trained:
        study = tuned_study(dag.plan.configs[key.group], key.variant)
        if study is None:
            assert planned[str(key)] == dag.run_hash(key), key
        elif Results(Path(smoke["results"])).study_best(study).is_file():  # a smoke run earlier in the session
            assert re.fullmatch(r"[0-9a-f]{16}", planned[str(key)]), key  # the base + its best.yaml's identity
        else:
            assert planned[str(key)] is None, key


def test_tuning_reads_its_groups_config_and_the_validation_data(dag, smoke):
    group = dag.tuning_group()
    assert TUNED_VARIANT in dag.plan.groups[group].variants
    assert dag.tune_config() == dag.group_config(group)
    entries = dag.tune_objective_entries()
    assert set(entries) == {t["benchmark"] for t in smoke["tune"]["objective"]}
    inputs = dag.tune_inputs()
    assert dag.hiershapes_manifest in inputs
    assert any(p.endswith("hierarcaps_clean.csv") for p in inputs)  # the validation PEP's cleaned split
    off = copy.deepcopy(smoke)
    off["groups"] = {k: v for k, v in off["groups"].items() if TUNED_VARIANT not in (v.get("variants") or [])}
    assert build_dag(off, ROOT).tune_config() == dag.effective_config


def test_tables_wait_for_the_optional_stages(dag, smoke):
    extras = dag.table_extras()
    assert set(dag.probe) <= set(extras) and dag.r("figures", "probe_exposure.png") in extras
    assert dag.r("tune", smoke["tune"]["study"], "trials.csv") in extras
    assert dag.r("data", "hiershapes", "table1.md") in extras  # the embedded split: made by the DAG
    cfg = copy.deepcopy(smoke)
    cfg["clean"]["datasets"]["elsewhere"] = {"csv": "/absent/test.csv", "images": "/absent/images"}
    assert dag.r("data", "elsewhere", "table1.md") not in build_dag(cfg, ROOT).table_extras()  # absent real data


def test_cleaning_hash_covers_its_own_data_set_only(dag, smoke):
    assert dag.clean_inputs("hiershapes") == dag.hiershapes_manifest
    cfg = copy.deepcopy(smoke)
    cfg["clean"]["datasets"]["hierarcaps"]["images"] = "/other/images"
    other = build_dag(cfg, ROOT)
    assert other.clean_hash("hiershapes") == dag.clean_hash("hiershapes")
    assert other.clean_hash("hierarcaps") != dag.clean_hash("hierarcaps")


def test_a_group_that_cannot_run_stops_the_build_with_its_key(smoke):
    cfg = copy.deepcopy(smoke)
    cfg["negatives"]["wordnet_zip"] = "/absent/wordnet.zip"
    assert "negatives" not in build_dag(cfg, ROOT).plan.configs  # optional: left out, with one line
    assert any("negatives" in line and "/absent/wordnet.zip" in line for line in build_dag(cfg, ROOT).notes)
    cfg["groups"]["negatives"]["optional"] = False
    with pytest.raises(ConfigError, match=r"^experiment groups: groups\.negatives: .*wordnet_zip '/absent/wordnet.zip' "
                                          r"not found; fix it, or mark the group `optional: true`"):
        build_dag(cfg, ROOT)


def test_the_build_prints_one_line_per_decision(dag):
    assert any(line.startswith("argent plan: ") for line in dag.notes)  # the cost
    assert all("\n" not in line for line in dag.notes)


def test_file_digest_is_the_content_and_empty_for_none(tmp_path):
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    a.write_bytes(b"same")
    b.write_bytes(b"same")
    assert file_digest(str(a)) == file_digest(str(b)) != ""
    assert file_digest(None) == file_digest(str(tmp_path / "absent")) == ""


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml", "smoke.yaml", "paper.yaml"])
def test_each_shipped_config_reads_the_cleaned_files_of_its_own_results_folder(name):
    """A benchmark's cleaned split and negative pool are made by this run's clean rule, under its own
    results folder; a path into another run's folder would read that run's files (or, absent, fall
    back to the whole split) without the DAG knowing. Every entry, run or not: the paths are derived."""
    from argent.evaluation.benchmarks import CLEANED, CLEANED_SIDE, entry_paths

    cfg = load_config(ROOT / "config" / name, base_dir=ROOT).raw
    results = str(Path(cfg["results"]))
    wrong = {f"benchmarks.{b}.{k}": p for b, entry in cfg["benchmarks"].items()
             for k, p in entry_paths(entry, (CLEANED, CLEANED_SIDE)).items() if not is_under(p, results)}
    assert not wrong, f"{name}: cleaned files outside {results}/: {wrong}"
    assert all(entry_paths(entry, (CLEANED,)) for entry in cfg["benchmarks"].values() if entry["protocol"] == "pep"
               and entry["hierarcaps_csv"] in {d["csv"] for d in cfg["clean"]["datasets"].values()})
