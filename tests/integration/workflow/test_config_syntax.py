"""`snakemake --config KEY=VALUE` with a key that is no section of the workflow config: one line from
the Snakefile naming --config's syntax (top-level keys only) and the ways to set a nested key, no
Python frames. (A dotted key, `--config train.steps=10`, Snakemake refuses itself, in its own argument
parser, before the workflow is read: the workflow cannot word that message.)"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.fixtures import ROOT


def test_a_command_line_key_that_is_no_section_is_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", "steps=10",
                           f"results={tmp_path / 'results'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "snakemake --config steps=...: not a top-level section" in out and "--set train.steps=10" in out, out[-2000:]
    assert "Traceback" not in out and not (tmp_path / "results").exists()
