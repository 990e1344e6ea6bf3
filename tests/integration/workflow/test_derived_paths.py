"""`snakemake -n` on the real Snakefile fills in the derived paths (argent/config/derived_paths.py) before the
DAG is built: moving `results:` moves the cleaned splits, negatives and image cache with it, and a
path spelled into a results folder stops the build, naming the key (tests/unit/config/test_config_paths.py
checks each key without Snakemake). A dry run writes nothing: the effective config is read as the
DAG build makes it (argent.plan.dag.Dag.files)."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from argent.config import load_config
from argent.plan.dag import build_dag
from tests.fixtures import ROOT


def _dry_run(tmp_path, override: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "override.yaml"
    path.write_text(yaml.safe_dump(override))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "quick.yaml"), str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_moving_results_moves_every_derived_path(tmp_path):
    results = tmp_path / "moved"
    proc = _dry_run(tmp_path, {"results": str(results)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert f"--out-dir {results}/data/hiershapes" in out  # argent clean writes there ...
    assert f"{results}/data/hiershapes/hierarcaps_clean.csv" in out  # ... and PEP reads it from there
    assert f"{results}/data/image_cache/hiershapes_train/cache.json" in out
    assert "results/data/" not in out.replace(f"{results}/data/", "")  # nothing of the default's folder
    assert not results.exists()  # a dry run writes nothing (workflow/rules/common.smk)
    dag = build_dag(load_config(ROOT / "config" / "quick.yaml", [f"results={results}"], base_dir=ROOT).raw, ROOT)
    effective = yaml.safe_load(dag.files()[str(results / "workflow_config.yaml")])
    assert effective["benchmarks"]["hs_pep"]["negative_pool"] == f"{results}/data/hiershapes/negative_pool.csv"
    assert effective["data"]["negatives"] == f"{results}/data/negatives/hiershapes_train.parquet"


def test_a_cleaned_file_spelled_for_another_results_folder_stops_the_build(tmp_path):
    proc = _dry_run(tmp_path, {"results": str(tmp_path / "r"),
                               "benchmarks": {"hs_pep": {"clean_csv": "results/data/hiershapes/hierarcaps_clean.csv"}}})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "benchmarks.hs_pep.clean_csv: 'results/data/hiershapes/hierarcaps_clean.csv' " \
                                    "is spelled by hand" in out and "Remove clean_csv" in out, out[-2000:]
    assert not (tmp_path / "r").exists()  # before any job, before the config files are written
