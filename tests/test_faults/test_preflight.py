"""Fail fast: `argent check` and the DAG stop on missing required data before anything expensive runs;
optional data is skipped with one line."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from argent.data.shards import ShardWriter

from .conftest import ROOT, TINY


def config_with(tmp_path, benchmarks, **extra):
    cfg = {**TINY, "results": str(tmp_path / "results"), "runs": {"sizes": ["tiny"]},
           "groups": {"main": {"variants": ["meru"]}},
           "evaluate": {"benchmarks": list(benchmarks)}, "benchmarks": benchmarks, **extra}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_missing_required_benchmark_names_key_and_path(tmp_path, argent):
    missing = tmp_path / "nowhere" / "val"
    config = config_with(tmp_path, {"inet": {"protocol": "zeroshot", "root": str(missing),
                                             "taxonomy": str(tmp_path / "t.txt")}})
    code, err = argent("check", "--config", config)
    assert code == 2 and f"benchmarks.inet.root: {missing}: not found" in err and "optional: true" in err


def test_missing_optional_benchmark_is_one_line(tmp_path, argent, capsys):
    config = config_with(tmp_path, {"inet": {"protocol": "zeroshot", "optional": True,
                                             "root": str(tmp_path / "nowhere"), "taxonomy": str(tmp_path / "t")}})
    code, err = argent("check", "--config", config)
    assert code == 0
    assert "skipped (optional, data absent): benchmarks.inet.root" in err


def test_unreadable_training_shards_fail_the_preflight(tmp_path, argent):
    shard = tmp_path / "shards" / "s-0.tar"
    with ShardWriter(shard) as writer:
        writer.write("a", {"txt": b"no image here"})
    shard.write_bytes(shard.read_bytes()[:700])  # torn inside the first member
    config = config_with(tmp_path, {}, data={"train_shards": str(tmp_path / "shards" / "s-*.tar")})
    code, err = argent("check", "--config", config)
    assert code == 2 and "data.train_shards" in err and "Traceback" not in err


def test_dag_stops_at_build_time_on_missing_required_benchmark(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump({
        "results": str(tmp_path / "results"),
        "benchmarks": {"sugarcrepe": {"protocol": "compositional", "optional": False, "json_dir": str(tmp_path / "typo"),
                                      "image_dir": str(tmp_path)}}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "config.yaml"), str(override)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"benchmarks.sugarcrepe.json_dir: {tmp_path / 'typo'}: not found" in out
