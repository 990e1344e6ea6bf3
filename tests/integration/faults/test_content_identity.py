"""A run's stamp covers the bytes it read (issue 54, item 1): a finished run records a fingerprint of every
file it read (argent/runs/fingerprint.py) in its checkpoint and ``summary.json``, outside its identity
hash. A negatives table edited in place or a shard replaced under its name is then seen: the trainer
trains the run afresh instead of answering "already finished" (``--resume strict`` refuses naming the
file), and ``snakemake -n`` plans its retraining. A summary stamped before fingerprints is never
re-planned for lack of one."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import torch
import yaml

from argent.config import ConfigError, experiment_from_dict, load_config
from argent.config.groups import RunKey
from argent.data.shards import ShardWriter
from argent.engine.trainer import train
from argent.plan.dag import build_dag
from argent.runs import ResumeMismatch, read_checkpoint
from tests.fixtures import ROOT, TINY, checksums, config_with, jpeg

KEY = RunKey("main", "clip", "tiny", 0)


def _shards(folder: Path, n: int = 2, tag: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(n):
        with ShardWriter(folder / f"shard-{s:06d}.tar") as writer:
            for i in range(4):
                writer.write(f"s{s}i{i}", {"txt": f"a red square number {i}{tag}".encode(), "jpg": jpeg(10 * s + i)})
    return folder


def _negatives_run(tmp_path: Path):
    """A 1-step run on one shard and a negatives parquet (random mode), both real files; the table carries
    the identity the workflow gives a table it mines (``data.negatives_id``), as a finished run of the
    workflow does: its hash names the table, not the table's bytes."""
    shards = _shards(tmp_path / "shards", 1)
    parquet = tmp_path / "negatives.parquet"
    pl.DataFrame({"key": ["s0i0", "s0i1"], "negative": ["a blue square", "a red circle"],
                  "c_hat": [0.9, 0.8], "mode": ["random", "random"]}).write_parquet(parquet)
    cfg = {**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4, "checkpoint_every": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain", "negatives": str(parquet),
                    "negatives_id": "mined-0123456789abcdef"}}
    exp = experiment_from_dict(cfg, "meru", "tiny", 0, base_dir=ROOT, variant_overrides={"hard_negatives": "random"})
    return exp, parquet


def test_a_finished_run_records_the_fingerprint_of_every_file_it_read(tmp_path):
    torch.set_num_threads(1)
    exp, parquet = _negatives_run(tmp_path)
    summary = train(exp, tmp_path / "run")
    assert set(summary["inputs"]) == {"train_shards", "negatives"}
    assert list(summary["inputs"]["negatives"]) == ["negatives.parquet"]
    size, mtime_ns, digest = summary["inputs"]["negatives"]["negatives.parquet"]
    assert size == parquet.stat().st_size and mtime_ns == parquet.stat().st_mtime_ns and digest.startswith("sha256:")
    assert read_checkpoint(tmp_path / "run" / "checkpoint.pt")["inputs"] == summary["inputs"]
    assert exp.result_hash() == json.loads((tmp_path / "run" / "summary.json").read_text())["config_hash"]


def test_a_negatives_table_edited_in_place_after_a_finished_run_is_retrained_not_already_finished(tmp_path, caplog):
    torch.set_num_threads(1)
    exp, parquet = _negatives_run(tmp_path)
    first = train(exp, tmp_path / "run")
    pl.DataFrame({"key": ["s0i0", "s0i1", "s0i2"], "negative": ["a green square", "a red star", "a hexagon"],
                  "c_hat": [0.7, 0.6, 0.5], "mode": ["random"] * 3}).write_parquet(parquet)  # edited in place
    with pytest.raises(ResumeMismatch, match=re.escape(str(parquet))):
        train(exp, tmp_path / "run", resume="strict")  # continuing would mix two tables in one run
    with caplog.at_level("WARNING", logger="argent.runs"):
        again = train(exp, tmp_path / "run", resume="auto")
    assert "its run read other data than there is now" in caplog.text and str(parquet) in caplog.text
    assert again["config_hash"] == first["config_hash"]  # the identity names the table, not its bytes
    assert again["inputs"]["negatives"] != first["inputs"]["negatives"]
    assert again["dropped_samples"] == {"no_hard_negative": 1}  # trained on the edited table (3 of 4 keys)
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["inputs"] == again["inputs"] and not (tmp_path / "run" / ".staging").exists()
    before = checksums(tmp_path / "run")
    train(exp, tmp_path / "run", resume="auto")  # the same data again: nothing to do
    assert checksums(tmp_path / "run") == before


def test_training_shards_replaced_under_the_same_names_retrain_the_run(tmp_path, caplog):
    torch.set_num_threads(1)
    shards = _shards(tmp_path / "shards", 1)
    cfg = {**TINY, "train": {**TINY["train"], "steps": 1, "batch_size": 4, "checkpoint_every": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain"}}
    exp = experiment_from_dict(cfg, "clip", "tiny", 0, base_dir=ROOT)
    first = train(exp, tmp_path / "run")
    _shards(tmp_path / "shards", 1, tag=" again")  # other samples, the same file name
    with caplog.at_level("WARNING", logger="argent.runs"):
        again = train(exp, tmp_path / "run", resume="auto")
    assert "shard-000000.tar" in caplog.text and "training from scratch" in caplog.text
    assert again["inputs"] != first["inputs"]


def test_a_run_stamped_before_fingerprints_stays_finished(tmp_path):
    """A checkpoint and summary without ``inputs`` (the running experiment's, trained before this code):
    a start with the same config answers "already finished", whatever the data."""
    torch.set_num_threads(1)
    exp, parquet = _negatives_run(tmp_path)
    train(exp, tmp_path / "run")
    run = tmp_path / "run"
    state = read_checkpoint(run / "checkpoint.pt")
    del state["inputs"]
    torch.save(state, run / "checkpoint.pt")
    summary = json.loads((run / "summary.json").read_text())
    del summary["inputs"]
    (run / "summary.json").write_text(json.dumps(summary))
    parquet.write_bytes(parquet.read_bytes())  # touched: a new time, the same bytes
    before = checksums(run)
    train(exp, run, resume="auto")
    assert checksums(run) == before


# ---- the DAG: a finished run whose data changed is re-planned --------------------------------------------


def _override(tmp_path: Path) -> Path:
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump({"results": str(tmp_path / "results"),
                                        "data": {"train_shards": str(tmp_path / "shards" / "shard-*.tar"),
                                                 "image_cache": ""}}))
    return override


def _stamp(dag, key: RunKey, inputs: dict | None) -> Path:
    summary = Path(dag.run_dir(key)) / "summary.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps({"config_hash": dag.run_hash(key), **({"inputs": inputs} if inputs else {})}))
    return summary


def test_the_dag_replans_a_finished_run_whose_shard_was_replaced_naming_it(tmp_path, monkeypatch):
    from argent.data.inputs import read_inputs, run_input_files

    monkeypatch.chdir(ROOT)
    shards = _shards(tmp_path / "shards", 2)
    dag = build_dag(load_config(_override(tmp_path)).raw, ROOT)
    record = read_inputs(run_input_files(str(shards / "shard-*.tar"), "", "none"))
    _stamp(dag, KEY, record)
    assert KEY not in build_dag(load_config(_override(tmp_path)).raw, ROOT).stale
    os.utime(shards / "shard-000001.tar", ns=(1, 1))  # a copy without -a: a new time, the same bytes
    assert KEY not in build_dag(load_config(_override(tmp_path)).raw, ROOT).stale
    _shards(tmp_path / "shards", 2, tag=" replaced")  # other bytes under the same names
    dag = build_dag(load_config(_override(tmp_path)).raw, ROOT)
    assert KEY in dag.stale
    line = dag.stale[KEY].line()
    assert "shard-000000.tar" in line and "retrained" in line, line
    assert any("shard-000000.tar" in note for note in dag.notes)
    assert dag.identity_inputs(KEY) == [dag.identity_marker(KEY)]  # the train job's extra input: retrained
    _stamp(dag, KEY, None)  # stamped before fingerprints: never re-planned for lack of them
    assert KEY not in build_dag(load_config(_override(tmp_path)).raw, ROOT).stale


def _by_hand(folder: Path) -> dict:
    """The ``inputs`` record of a folder's shards, written from the documented format (docs/reliability.md
    §17: {kind: {name: [size, mtime_ns, "sha256:<hex>"]}}), not by the code under test."""
    files = sorted(folder.glob("shard-*.tar"))
    return {"train_shards": {f.name: [f.stat().st_size, f.stat().st_mtime_ns,
                                      "sha256:" + hashlib.sha256(f.read_bytes()).hexdigest()] for f in files}}


def test_snakemake_dry_run_replans_the_run_whose_shard_was_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    shards = _shards(tmp_path / "shards", 2)
    override = _override(tmp_path)
    dag = build_dag(load_config(override).raw, ROOT)
    summary = _stamp(dag, KEY, _by_hand(shards))

    def dry_run() -> str:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                               str(ROOT / "config" / "config.yaml"), str(override), "--", str(summary)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        return proc.stdout + proc.stderr

    assert not re.search(r"^rule train:", dry_run(), re.M)
    _shards(tmp_path / "shards", 2, tag=" replaced")
    out = dry_run()
    assert re.search(r"^rule train:", out, re.M) and "its run read other data than there is now" in out, out[-3000:]


# ---- a declared data.dataset_hash is checked against the data ------------------------------------------

TINY_DATA = {"train_scenes": 8, "val_scenes": 4, "test_scenes": 4, "per_class": 1, "val_per_class": 1,
             "pep_val_scenes": 0, "shard_size": 4, "image_size": 32, "supersample": 1}


def _embedded_config(tmp_path: Path, argent) -> Path:
    """A workflow config on an embedded data set generated as the workflow does (``argent synth --params``
    with the file of hiershapes.params the DAG writes): its data.dataset_hash is derived from those params."""
    config = config_with(tmp_path, {}, hiershapes={"out": str(tmp_path / "hs"), "params": TINY_DATA},
                         data={"train_shards": "hiershapes", "image_cache": ""})
    params = tmp_path / "params.yaml"  # what the DAG writes: the merged config's hiershapes.params (Dag.files)
    params.write_text(yaml.safe_dump(load_config(config).raw["hiershapes"]["params"], sort_keys=True))
    assert argent("synth", "--out", tmp_path / "hs", "--params", params, "--jobs", "1")[0] == 0
    return config


def test_the_embedded_data_records_the_dataset_hash_the_workflow_declares_for_it(tmp_path, argent):
    config = _embedded_config(tmp_path, argent)
    declared = load_config(config).raw["data"]["dataset_hash"]
    manifest = json.loads((tmp_path / "hs" / "manifest.json").read_text())
    assert declared.startswith("hiershapes-") and manifest["dataset_hash"] == declared
    code, err = argent("check", "--config", config)
    assert code == 0, err


def test_the_embedded_data_regenerated_with_other_parameters_is_refused_naming_the_manifest(tmp_path, argent,
                                                                                              monkeypatch):
    config = _embedded_config(tmp_path, argent)
    params = tmp_path / "params.yaml"
    code, _ = argent("synth", "--out", tmp_path / "hs", "--params", params, "--train-scenes", "12",
                     "--jobs", "1", "--overwrite")  # by hand, other parameters; the config still declares the first
    assert code == 0
    manifest = tmp_path / "hs" / "manifest.json"
    code, err = argent("check", "--config", config)  # argent check, the DAG's first job
    assert code == 2 and "data.dataset_hash" in err and str(manifest) in err and "Traceback" not in err, err
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out",
                       tmp_path / "run")  # the verb by hand
    assert code == 2 and "data.dataset_hash" in err and str(manifest) in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError, match=re.escape(str(manifest))):  # snakemake -n's DAG build
        build_dag(load_config(config, base_dir=ROOT).raw, ROOT)
