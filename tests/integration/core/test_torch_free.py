"""Every package imports without torch (their ``__init__``s name their API lazily, argent/lazy.py), and so
does every module that lives in its stage's package but is read while the workflow parses: the
config's modules (the loss-kind registry among them), the results layout, the run identity, the job
records, the pretrained: section, the plan, the restamp verb's --help, the config's section types, the
bad-data policy and the HierarCaps reader (a data stage that needs no tensors should not load torch).
Checked in a fresh interpreter that imports them one by one, so the first module that pulls torch in
is the one named."""

from __future__ import annotations

import subprocess
import sys

from tests.fixtures import ROOT

TORCH_FREE = (
    "argent.config.convert", "argent.config.registry", "argent.config.loading", "argent.config.limits",
    "argent.config.loss_kinds", "argent.config.variant", "argent.config.experiment", "argent.config.derived_paths",
    "argent.config.workflow", "argent.runs.layout", "argent.runs.identity", "argent.runs.job_records", "argent.io",
    "argent.lazy", "argent.restamp.cli", "argent.data.policy", "argent.data.formats.hierarcaps",
    "argent.models.pretrained.section",
    "argent.plan.cli", "argent.plan.cost", "argent.plan.dag", "argent.plan.preflight",
    "argent.evaluation.benchmarks", "argent.evaluation.config",
    "argent.tablespec.claims", "argent.tablespec.outputs", "argent.tablespec.section", "argent.tables.cost",
    "argent.cleaning.config", "argent.negatives.config", "argent.probe.config", "argent.tuning.config",
)
PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
    if "torch" in sys.modules:
        print(name)
        break
"""


def packages() -> list[str]:
    """Every package under argent/ (a folder with an __init__.py)."""
    return sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "argent").rglob("__init__.py"))


def test_packages_and_the_workflow_s_modules_import_without_torch():
    names = packages() + list(TORCH_FREE)
    assert "argent.models.pretrained" in names and "argent.losses" in names
    out = subprocess.run([sys.executable, "-c", PROBE, *names], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", (f"importing {out.stdout.strip()} imports torch: import it lazily "
                                      f"(a package's names through argent.lazy.lazy_exports)")


def test_a_lazy_package_names_its_api_and_imports_it_on_first_use():
    probe = ("import sys, argent.models as m, argent.models.pretrained as p\n"
             "before = 'torch' in sys.modules\n"
             "print(before, sorted(m.__all__) == sorted(['DualEncoder', 'build_model', 'tokenize']),\n"
             "      {'build_model', 'tokenize'} <= set(dir(m)), 'load_pretrained' in dir(p),\n"
             "      m.build_model.__module__, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True", "argent.models.dual_encoder", "True"]
