"""A run's identity at every read (issue 37, item 1; the evaluation-JSON shapes of item 2).

A folder of the results layout names a run (group, variant, size, seed); the plan knows the identity
hash it trains there (``argent.plan.targets.planned_hash``, the train rule's ``hash`` param). A run
trained into the folder by hand with another config, variant or ``--name`` carries another hash in
its summary, checkpoint and evaluations: the tables and ``argent evaluate`` refuse it naming both
hashes and the fix, and ``snakemake -n`` plans its retraining. ``argent train`` (and probe, clean,
mine) read ``--config`` merged over config/config.yaml, so a run trained by hand with the workflow's
config has the workflow's hash (``argent evaluate`` reads its file alone: docs/reliability.md §6).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import argent.engine.trainer as trainer
from argent.config import WorkflowConfig, experiment_from_dict, load_config
from argent.config.groups import IdentityError, RunKey, base_variant, run_identity
from argent.engine.trainer import train
from argent.io import ReadError
from argent.plan.dag import build_dag
from argent.plan.groups import build_plan
from argent.plan.targets import planned_hash
from argent.runs import eval_dir, run_dir
from argent.tables.collect import check_run_identities, collect, collect_skips
from tests.fixtures import ROOT, TINY, checksums, stream

SMOKE = ROOT / "config" / "smoke.yaml"
KEY = RunKey("main", "hycoclip", "tiny", 0)


def _json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _as_named(gcfg: dict, base: str, name: str, seed: int = 0) -> str:
    """The hash of ``argent train --variant <base> --name <name>`` with a group's config."""
    exp = experiment_from_dict(gcfg, base, "tiny", seed, base_dir=ROOT)
    exp.variant_name = name
    return exp.result_hash()


@pytest.fixture
def smoke_plan(monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = load_config(SMOKE).raw
    return cfg, build_plan(WorkflowConfig(cfg), ROOT)


# ---- tables: LOST ----------------------------------------------------------------------------------


def test_tables_refuse_a_run_trained_into_another_variants_folder_with_its_name(smoke_plan, tmp_path, argent):
    """`argent train --variant argent --name hycoclip --out results/runs/main/hycoclip-tiny/seed0`: the
    folder's name, the JSON's variant/size/seed all say hycoclip; only the hash says ARGENT."""
    cfg, plan = smoke_plan
    results = tmp_path / "results"
    wrong = _as_named(plan.configs["main"], "argent", "hycoclip")
    planned = run_identity(plan.configs["main"], KEY, ROOT)
    assert wrong != planned
    summary = _json(run_dir(results, "main", "hycoclip", "tiny", 0) / "summary.json", {"config_hash": wrong})
    result = _json(eval_dir(results, "main", "hycoclip", "tiny", 0) / "hs_zeroshot.json",
                   {"variant": "hycoclip", "size": "tiny", "seed": 0, "config_hash": wrong, "metrics": {"top1": 0.9}})
    code, err = argent("tables", "--config", SMOKE, "--results", results)
    assert code == 2 and "Traceback" not in err, err
    assert str(summary) in err and wrong in err and planned in err and "argent restamp" in err, err
    assert not (results / "tables" / "main.md").exists()
    # the evaluation alone (the summary gone) is refused the same way; with the plan's hash, both pass
    summary.unlink()
    with pytest.raises(IdentityError, match=re.escape(str(result))):
        check_run_identities(plan, results, ROOT)
    _json(summary, {"config_hash": planned})
    _json(result, {"variant": "hycoclip", "size": "tiny", "seed": 0, "config_hash": planned, "metrics": {"top1": 0.9}})
    check_run_identities(plan, results, ROOT)


# ---- evaluation JSON shapes ------------------------------------------------------------------------


@pytest.mark.parametrize("data, words", [
    ([{"metrics": {"top1": 0.5}}], ["expected an evaluation result", "JSON array"]),
    ({"metrics": [0.5, 0.6]}, ["'metrics' must be an object", "list"]),
    ({"metrics": {"top1": "0.5"}}, ["metrics/top1: '0.5' is not a number"]),
    ({"metrics": {"top1": 0.5}, "counts": [1]}, ["'counts' must be an object"]),
])
def test_a_malformed_evaluation_json_names_the_file_and_the_key(tmp_path, data, words):
    path = _json(eval_dir(tmp_path, "main", "clip", "tiny", 0) / "hs_zeroshot.json", data)
    with pytest.raises(ReadError) as info:
        collect(tmp_path / "eval")
    assert str(path) in str(info.value) and all(w in str(info.value) for w in words), info.value
    with pytest.raises(ReadError, match=re.escape(str(path))):
        collect_skips(tmp_path)


def test_a_summary_that_is_not_an_object_is_named(tmp_path):
    path = _json(run_dir(tmp_path, "main", "clip", "tiny", 0) / "summary.json", ["config_hash"])
    with pytest.raises(ReadError, match=re.escape(str(path))):
        collect_skips(tmp_path)


# ---- every verb reads --config merged over config/config.yaml: SILENT --------------------------------


def test_a_run_trained_by_hand_with_the_workflows_config_has_the_workflows_identity(smoke_plan, tmp_path, argent,
                                                                                     monkeypatch):
    """`argent train --config config/smoke.yaml` by hand, and with the group file the workflow passes
    (already merged over config/config.yaml: merging it again changes nothing), trains the run the
    DAG plans: the same hash as the train rule's `hash` param."""
    cfg, plan = smoke_plan
    seen = []
    # the verb imports the trainer when it runs (its --help loads no torch): patch the trainer's module
    monkeypatch.setattr(trainer, "train", lambda exp, out, resume: seen.append(exp.result_hash()) or {})
    dag = build_dag(cfg, ROOT)  # reads results/smoke, writes nothing
    group_file = tmp_path / "main.yaml"
    group_file.write_text(dag.files()[dag.group_config("main")])
    for config in (SMOKE, group_file):
        code, err = argent("train", "--config", config, "--variant", "clip", "--size", "tiny", "--seed", "0",
                           "--out", tmp_path / "r", "--name", "clip")
        assert code == 0, err
    assert seen == [dag.run_hash(RunKey("main", "clip", "tiny", 0))] * 2
    # the group file merged again over config/config.yaml is the group file (+ the `groups` it drops)
    merged = load_config(group_file).raw
    assert {k: v for k, v in merged.items() if k != "groups"} == yaml.safe_load(group_file.read_text())
    # --no-default reads the file alone (smoke.yaml alone is another run)
    code, _ = argent("train", "--config", SMOKE, "--variant", "clip", "--size", "tiny", "--out", tmp_path / "r",
                     "--no-default")
    assert code == 0 and seen[-1] != seen[0]
    # the tuned run as the train rule starts it (--variant-file best.yaml) is the hash the readers compare;
    # a results folder of its own (the paths derived from it, the negatives', follow it)
    dag = build_dag(load_config(SMOKE, [f"results={tmp_path / 'results'}"]).raw, ROOT)
    best = tmp_path / "results" / "tune" / "argent_weights" / "best.yaml"
    best.parent.mkdir(parents=True)
    best.write_text(yaml.safe_dump({"trial": 1, "variant": {"entailment_weight": 0.3, "huber_beta": 0.5}}))
    tuning = tmp_path / "tuning.yaml"
    tuning.write_text(dag.files()[dag.group_config("tuning")])
    code, err = argent("train", "--config", tuning, "--variant", "argent", "--size", "tiny", "--seed", "0",
                       "--out", tmp_path / "r", "--name", "argent-tuned", "--variant-file", best)
    key = RunKey("tuning", "argent-tuned", "tiny", 0)
    assert code == 0 and seen[-1] == planned_hash(dag.plan, key, ROOT, tmp_path / "results") != dag.run_hash(key)
    # every run the DAG trains, started as the train rule starts it, is the hash the readers compare with
    for key in dag.plan.trained:
        group_file.write_text(dag.files()[dag.group_config(key.group)])
        extra = ["--variant-file", str(best)] if key.variant == "argent-tuned" else []
        code, err = argent("train", "--config", group_file, "--variant", base_variant(cfg, key.variant), "--size",
                           key.size, "--seed", key.seed, "--out", tmp_path / "r", "--resume", "auto", "--name",
                           key.variant, *extra)
        assert code == 0 and seen[-1] == planned_hash(dag.plan, key, ROOT, tmp_path / "results"), (key, err)


def test_the_stage_verbs_read_their_section_merged(tmp_path, monkeypatch):
    from argent.cleaning.config import load_clean_section
    from argent.negatives.config import load_negatives_section
    from argent.probe.config import load_probe_section

    monkeypatch.chdir(ROOT)
    config = tmp_path / "mine.yaml"
    config.write_text("probe: {seeds: [1]}\nnegatives: {top_k: 3}\nclean: {keep: 7}\n")
    assert load_probe_section(config).variants == ["clip", "meru", "hycoclip", "argent"]  # config.yaml's
    assert load_probe_section(config).seeds == [1] and load_probe_section(config, merge_default=False).variants == []
    assert load_negatives_section(config).modes == ["concrete", "random"]
    assert "hiershapes" in load_clean_section(config).datasets


# ---- argent evaluate: attribution ---------------------------------------------------------------------


def _tiny_workflow_config(tmp_path: Path) -> Path:
    cfg = {**TINY, "results": str(tmp_path / "results"),
           "groups": {"main": {"variants": ["clip", "hycoclip", "argent"], "sizes": ["tiny"], "seeds": [0]}},
           "benchmarks": {"zs": {"protocol": "zeroshot", "root": str(tmp_path / "nowhere"),
                                 "taxonomy": str(tmp_path / "nowhere.txt")}}}
    path = tmp_path / "workflow.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_evaluate_refuses_a_run_that_is_not_the_one_its_folder_names(tmp_path, argent, monkeypatch):
    monkeypatch.chdir(ROOT)
    config = _tiny_workflow_config(tmp_path)
    raw = load_config(config, merge_default=False).raw
    exp = experiment_from_dict(raw, "argent", "tiny", 0, base_dir=ROOT)
    exp.variant_name = "hycoclip"  # argent train --variant argent --name hycoclip
    folder = run_dir(tmp_path / "results", *("main", "hycoclip", "tiny", 0))
    train(exp, folder, batches=stream)
    planned = run_identity(build_plan(WorkflowConfig(raw), ROOT).configs["main"], KEY, ROOT)
    out = tmp_path / "results" / "eval"
    # the tiny config is a workflow of its own, read alone (evaluate merges over config/config.yaml otherwise)
    code, err = argent("evaluate", "--run", folder, "--benchmark", "zs", "--config", config, "--out-dir", out,
                       "--no-default")
    assert code == 2 and "Traceback" not in err, err
    assert exp.result_hash() in err and planned in err and str(folder) in err, err
    # a folder that names another variant than the run records (trained without --name)
    other = run_dir(tmp_path / "results", "main", "clip", "tiny", 0)
    shutil.copytree(folder, other)
    code, err = argent("evaluate", "--run", other, "--benchmark", "zs", "--config", config, "--out-dir", out,
                       "--no-default")
    assert code == 2 and "records hycoclip-tiny seed 0" in err and "names clip-tiny seed 0" in err, err
    assert not out.exists()

    # The workflow's retraining of such a folder (`argent train ... --resume auto`, after Snakemake removed
    # the summary, its output): staged; a failure keeps the old files; the next start finishes it.
    (folder / "summary.json").unlink()
    before = checksums(folder)
    right = experiment_from_dict(raw, "hycoclip", "tiny", 0, base_dir=ROOT)

    def failing(start):
        yield next(stream(start))
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        train(right, folder, resume="auto", batches=failing)
    assert {k: v for k, v in checksums(folder).items() if not k.startswith(".staging")} == before
    summary = train(right, folder, resume="auto", batches=stream)
    assert summary["config_hash"] == planned == json.loads((folder / "summary.json").read_text())["config_hash"]
    assert not (folder / ".staging").exists()


# ---- the DAG: a finished folder of another identity is retrained ----------------------------------------


def _dry_run(override: Path, target: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "config.yaml"), str(override), "--", str(target)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return out


def _jobs(out: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", out, re.M))


def test_snakemake_replans_a_finished_folder_whose_summary_carries_another_hash(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump({"results": str(tmp_path / "results"),  # no data the DAG must make first
                                        "data": {"train_shards": str(tmp_path / "shards" / "shard-*.tar"),
                                                 "image_cache": ""}}))
    dag = build_dag(load_config(override).raw, ROOT)
    key = RunKey("main", "clip", "tiny", 0)
    planned, wrong = dag.run_hash(key), _as_named(dag.plan.configs["main"], "argent", "clip")
    summary = Path(dag.run_dir(key)) / "summary.json"
    _json(summary, {"config_hash": planned})
    assert "train" not in _jobs(_dry_run(override, summary))  # finished, the plan's run: nothing to do
    _json(summary, {"config_hash": wrong})  # trained by hand: --variant argent --name clip
    out = _dry_run(override, summary)
    assert "train" in _jobs(out), out[-3000:]
    assert f"its summary.json carries config hash {wrong}, the plan trains {key} there with hash {planned}" in out
    assert summary.read_text() == json.dumps({"config_hash": wrong})  # read, never touched
    assert not (tmp_path / "results" / "identity").exists()  # a dry run's marker is a temporary file
    assert "train" in _jobs(_dry_run(override, summary))  # still planned at the next build
    # the workflow's retraining wrote the plan's run: nothing more to do, the marker stays an input
    time.sleep(0.01)
    _json(summary, {"config_hash": planned})
    assert "train" not in _jobs(_dry_run(override, summary))
