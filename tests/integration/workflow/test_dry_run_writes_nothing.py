"""`snakemake -n` on the real Snakefile plans and writes nothing (workflow/rules/common.smk: the config
files and identity markers are written only by a run that executes); the quick config plans no
cleaning of the real HierarCaps it never evaluates; and the report lists the tables' HTML pages,
claims first (workflow/rules/tables.smk; read from the parsed workflow, no results folder needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.fixtures import ROOT

# Parses the workflow as `snakemake -n` does (the dry-run flag in the output settings: nothing written)
# and prints every output a rule marks for the report, with its category and caption.
REPORT_ENTRIES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.io import get_flag_value, is_flagged
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(dryrun=True)) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path("workflow/Snakefile"),
                            config_settings=ConfigSettings(configfiles=[Path(p) for p in sys.argv[1:]]),
                            workdir=Path.cwd())._workflow
    entries = [{"rule": rule.name, "file": str(f), "category": get_flag_value(f, "report").category,
                "caption": str(get_flag_value(f, "report").caption.get_path_or_uri(secret_free=True))}
               for rule in workflow.rules for f in rule.output if is_flagged(f, "report")]
print("REPORT " + json.dumps(entries))
"""


def _override(tmp_path: Path) -> Path:
    path = tmp_path / "override.yaml"
    path.write_text(yaml.safe_dump({"results": str(tmp_path / "results")}))
    return path


def _dry_run(tmp_path: Path, config: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1", "--configfile",
                           str(ROOT / "config" / config), str(_override(tmp_path))],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


def test_a_dry_run_of_the_smoke_config_writes_nothing(tmp_path):
    out = _dry_run(tmp_path, "smoke.yaml")
    assert "rule tables:" in out and "rule train:" in out
    assert not (tmp_path / "results").exists(), sorted(p.name for p in (tmp_path / "results").rglob("*"))


def test_the_quick_config_plans_no_cleaning_of_the_real_hierarcaps(tmp_path):
    out = _dry_run(tmp_path, "quick.yaml")
    assert "wildcards: dataset=hiershapes\n" in out
    assert "dataset=hierarcaps" not in out and "dataset=hiershapes_val" not in out
    assert "argent tables: no claims table: each claim's two runs share 1 seed at most" in out
    assert str(tmp_path / "results" / "figures" / "runs") in out  # hs_analysis draws the per-run figures
    assert not (tmp_path / "results").exists()


def test_the_report_lists_each_tables_html_page_claims_first(tmp_path):
    proc = subprocess.run([sys.executable, "-c", REPORT_ENTRIES, str(ROOT / "config" / "smoke.yaml"),
                           str(_override(tmp_path))], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = json.loads(proc.stdout.split("REPORT ", 1)[1])
    tables = {Path(e["file"]).name: e for e in entries if e["rule"] == "tables"}
    pages = ["claims.html", "main.html", "ablations.html", "mechanism.html", "probe.html", "cost.html"]
    assert set(pages) <= set(tables) and not [name for name in tables if name.endswith(".md")]
    # the report's menu sorts categories by name: the claims first, then the paper's tables, figures last
    categories = sorted({e["category"] for e in entries})
    assert categories[0] == tables["claims.html"]["category"] == "1. Claims"
    assert [tables[p]["category"] for p in pages] == sorted(tables[p]["category"] for p in pages)
    assert categories[-1] == tables["training_curves.png"]["category"]
    assert all(Path(e["caption"]).is_file() for e in entries), [e["caption"] for e in entries]
    assert not (tmp_path / "results").exists()
