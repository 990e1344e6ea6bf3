"""The Snakefile imports argent while it parses, once per run and once more inside every cluster job:
what it imports must not pull in torch (~5-8 s a parse on 2 cores, paid 28 times by the smoke DAG on
Slurm). Checked in a fresh interpreter, on the import lines of workflow/rules/*.smk themselves; the plan's
cost model (argent.models.flops, argent.plan.cost) stays torch-free the same way."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.fixtures import ROOT

HEAVY = ("torch", "torchvision", "mlflow", "sklearn", "polars", "optuna")


def workflow_imports() -> str:
    """Every top-level import statement of the rule files (parenthesised ones whole)."""
    found = []
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")) + [ROOT / "workflow" / "Snakefile"]:
        found += re.findall(r"^(?:from \S+ import \([^)]*\)|from \S+ import [^\n]+|import [^\n]+)", smk.read_text(), re.M)
    return "\n".join(found)


def test_the_snakefile_parses_without_heavy_imports():
    code = workflow_imports()
    assert "from argent" in code, "the rule files import argent's helpers"
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the Snakefile's imports pull in {out.stdout.strip()}; import them lazily"


def test_the_plan_stays_torch_free():
    probe = "import sys, argent.models.flops, argent.plan.cost; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
