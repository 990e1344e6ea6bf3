"""A run's identity is what it computed from, not where it lives (issue 45, identity v2): no path enters
the hash; the embedded data set's and a mined negatives table's identities do, and only for the
variants that read them; a v1 run folder (paths hashed) is carried over by ``argent restamp``."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import yaml

from argent.cli import main as argent_main
from argent.config import IDENTITY_VERSION, ConfigError, WorkflowConfig
from argent.config.groups import RunKey, run_experiment, run_identity
from argent.models import build_model
from argent.models.trained import load_model
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.restamp.stamp import restamp_run
from argent.runs import CheckpointError, eval_dir, run_dir, v1_hash
from tests.fixtures import ROOT

NEGATIVES_VARIANT = "argent_negs_concrete"


def plan_hashes(*overrides: str) -> dict[RunKey, str]:
    cfg = merged_config(Path("config/config.yaml"), list(overrides), ROOT)
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    return {key: run_identity(plan.configs[key.group], key, ROOT) for key in plan.trained}


@pytest.fixture(scope="module")
def before() -> dict[RunKey, str]:
    return plan_hashes()


@pytest.mark.parametrize("spelling", ["/tmp/elsewhere/results", "x/../results", str(ROOT / "results"), "renamed"])
def test_a_moved_or_respelled_results_folder_keeps_every_run_hash(before, spelling):
    assert plan_hashes(f"results={spelling}") == before


def test_a_moved_data_folder_keeps_every_run_hash(before):
    assert plan_hashes("hiershapes.out=/tmp/elsewhere/hiershapes") == before


def test_the_embedded_data_set_enters_by_its_generator_parameters(before):
    after = plan_hashes("hiershapes.params.seed=7")
    assert all(after[key] != before[key] for key in before)  # other images: every run


def test_only_the_variants_that_read_the_negatives_take_their_identity(before):
    after = plan_hashes("negatives.modes=[concrete]")  # another table, same path
    changed = {key for key in before if after.get(key) != before[key]}
    if not any(key.variant == NEGATIVES_VARIANT for key in before):
        pytest.skip("the negatives group is left out (no WordNet staged: ../shared/data/wordnet/wordnet.zip)")
    assert changed and all(key.group == "negatives" for key in changed), sorted(changed)
    assert not any(key.variant.startswith("clip") for key in changed)


def _experiment(variant: str = "clip"):
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    group = "negatives" if variant.startswith("argent_negs") else "main"
    return run_experiment(plan.configs[group], RunKey(group, variant, "tiny", 0), ROOT)


def test_a_negatives_file_of_ones_own_enters_by_its_content(tmp_path):
    exp = _experiment("argent")
    exp = dataclasses.replace(exp, variant=dataclasses.replace(exp.variant, hard_negatives="concrete"))
    table = tmp_path / "a" / "negs.parquet"
    table.parent.mkdir()
    table.write_bytes(b"one table")
    at_a = dataclasses.replace(exp, data=dataclasses.replace(exp.data, negatives=str(table), negatives_id=""))
    moved = tmp_path / "b" / "renamed.parquet"
    moved.parent.mkdir()
    moved.write_bytes(b"one table")
    at_b = dataclasses.replace(at_a, data=dataclasses.replace(at_a.data, negatives=str(moved)))
    assert at_a.result_hash() == at_b.result_hash()
    moved.write_bytes(b"another table")
    assert at_a.result_hash() != at_b.result_hash()
    clip = _experiment("clip")  # reads no negatives: whatever the path holds, the same run
    assert dataclasses.replace(clip, data=dataclasses.replace(clip.data, negatives=str(moved))).result_hash() \
        == clip.result_hash()


def test_the_data_streams_are_identity_and_the_workers_are_not():
    exp = _experiment()
    workers = dataclasses.replace(exp, train=dataclasses.replace(exp.train, num_workers=4))
    streams = dataclasses.replace(exp, train=dataclasses.replace(exp.train, data_streams=2))
    assert workers.result_hash() == exp.result_hash() != streams.result_hash()


# ---- a v1 run folder --------------------------------------------------------------------------------


def v1_run(results: Path, num_workers: int = 0) -> Path:
    """A run folder as identity v1 wrote it: its config without the v2 fields, checkpoint and summary
    with the v1 hash (the data's paths hashed)."""
    exp = run_experiment(*_main_key())
    folder = run_dir(results, "main", "clip", "tiny", 0)
    folder.mkdir(parents=True)
    raw = exp.to_dict()
    raw["train"].pop("data_streams")
    raw["train"]["num_workers"] = num_workers
    raw["data"].pop("negatives_id")
    raw["data"]["dataset_hash"] = ""
    (folder / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    from argent.runs import read_run_config
    old = v1_hash(read_run_config(folder))
    torch.save({"model": build_model(exp.model, exp.variant.geometry).state_dict(), "config_hash": old,
                "identity_version": 1}, folder / "checkpoint.pt")
    (folder / "summary.json").write_text(json.dumps({"run": "clip-tiny/seed0", "config_hash": old, "identity_version": 1}))
    return folder


def _main_key():
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    return build_plan(WorkflowConfig(cfg), ROOT).configs["main"], RunKey("main", "clip", "tiny", 0), ROOT


def test_a_v1_run_is_refused_with_the_restamp_line_then_carried_over(tmp_path):
    folder = v1_run(tmp_path / "results")
    old = json.loads((folder / "summary.json").read_text())["config_hash"]
    evaluation = eval_dir(tmp_path / "results", "main", "clip", "tiny", 0) / "hs_zeroshot.json"
    evaluation.parent.mkdir(parents=True)
    evaluation.write_text(json.dumps({"config_hash": old, "metrics": {"top1": 0.5}}))
    other = evaluation.with_name("hs_retrieval.json")  # of other weights: not this run's to re-stamp
    other.write_text(json.dumps({"config_hash": "0123456789abcdef"}))
    times = {path: path.stat().st_mtime_ns for path in (evaluation, folder / "summary.json")}
    with pytest.raises(CheckpointError, match="argent restamp --run"):
        load_model(folder)
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    weights = torch.load(folder / "checkpoint.pt", weights_only=True)["model"]
    outcome = restamp_run(folder, cfg, plan, ROOT)
    assert outcome.status == "restamped", outcome.message
    assert "1 evaluation/probe result" in outcome.message
    new = json.loads(evaluation.read_text())
    assert new == {"config_hash": run_identity(*_main_key()), "metrics": {"top1": 0.5}}
    assert json.loads(other.read_text())["config_hash"] == "0123456789abcdef"
    assert {path: path.stat().st_mtime_ns for path in times} == times  # nothing downstream is out of date
    model, exp = load_model(folder)
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert state["config_hash"] == run_identity(*_main_key()) and state["identity_version"] == IDENTITY_VERSION
    assert all(torch.equal(weights[k], state["model"][k]) for k in weights)  # weights untouched
    stored = yaml.safe_load((folder / "config.yaml").read_text())
    assert stored["data"]["dataset_hash"].startswith("hiershapes-") and stored["train"]["data_streams"] == 1
    assert json.loads((folder / "summary.json").read_text())["config_hash"] == state["config_hash"]
    assert restamp_run(folder, cfg, plan, ROOT).status == "current"


def test_a_v1_run_of_two_loader_workers_is_not_the_default_stream(tmp_path):
    """v1 split the data by worker: such a run read two streams, which the default (one) is not."""
    folder = v1_run(tmp_path / "results", num_workers=2)
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    outcome = restamp_run(folder, cfg, build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert outcome.status == "refused" and "train.data_streams" in outcome.message, outcome.message
    cfg = merged_config(Path("config/config.yaml"), ["train.data_streams=2"], ROOT)
    outcome = restamp_run(folder, cfg, build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert outcome.status == "restamped", outcome.message


def test_a_v1_checkpoint_of_another_config_is_refused(tmp_path):
    folder = v1_run(tmp_path / "results")
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    torch.save({**state, "config_hash": "0123456789abcdef"}, folder / "checkpoint.pt")
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    outcome = restamp_run(folder, cfg, build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert outcome.status == "refused" and "another config" in outcome.message


def test_the_dag_stops_once_for_v1_stamps_instead_of_retraining(tmp_path):
    """Old runs are not retrained because the encoding changed: the DAG names the command that carries
    them over, once."""
    from argent.plan.dag import build_dag

    results = tmp_path / "results"
    v1_run(results)
    cfg = merged_config(Path("config/config.yaml"), [f"results={results}"], ROOT)
    with pytest.raises(ConfigError, match=r"1 finished run\(s\) .* identity v1 stamp") as err:
        build_dag(cfg, ROOT)
    assert f"argent restamp --results {results}" in str(err.value)
    argent_main(["restamp", "--results", str(results), "--base-dir", str(ROOT)])
    assert not build_dag(cfg, ROOT).stale  # carried over: the plan sees it finished
