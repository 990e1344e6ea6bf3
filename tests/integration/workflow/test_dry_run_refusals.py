"""`snakemake -n` on the real Snakefile stops a bad config before any job: a shell injection
(tests/unit/faults/test_injection.py checks the schema and the quoting), a missing required benchmark
(tests/unit/faults/test_preflight.py, `argent check`'s side), a key repeated in a configfile
(tests/unit/config/test_strict_yaml.py, every other reader)."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from tests.fixtures import ROOT


def test_snakemake_stops_an_injection_before_any_job(tmp_path):
    """End to end: the real Snakefile with ``clean.keep: "$(touch X)"`` (the case that used to run; its
    type refuses it at DAG build: it no longer reaches a shell, so the schema has no pattern for it)."""
    marker = tmp_path / "PWNED"
    override = tmp_path / "evil.yaml"
    override.write_text(yaml.safe_dump({"clean": {"keep": f"$(touch {marker})"}, "results": str(tmp_path / "r")}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "config.yaml"), str(override)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "keep" in proc.stdout + proc.stderr
    assert not marker.exists()


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


def test_snakemake_stops_on_a_repeated_key_in_a_configfile(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump({"results": str(tmp_path / "results")}) + "train: {steps: 12, steps: 2}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "config.yaml"), str(override)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{override}:2: duplicate key 'steps'" in out, out[-2000:]
    assert not (tmp_path / "results").exists()
