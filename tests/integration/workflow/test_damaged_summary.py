"""A workflow whose jobs all succeeded exits 0 even when the end-of-run summary finds a damaged
``tables/claims.csv`` (issue 54, item 2): before, the summary's ``UnicodeDecodeError`` made it exit 1."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.fixtures import ROOT


def test_a_damaged_claims_table_does_not_fail_a_workflow_whose_jobs_succeeded(tmp_path):
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "claims.csv").write_bytes(b"id,family,verdict\n\xf2\xff\xfe" * 50)  # not UTF-8
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile",
                           str(ROOT / "config" / "smoke.yaml"), "--config", f"results={results}", "--",
                           str(results / "preflight.json")],  # one job: argent check
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "claims table is damaged" in out and "UnicodeDecodeError" in out and "Traceback" not in out, out[-3000:]
