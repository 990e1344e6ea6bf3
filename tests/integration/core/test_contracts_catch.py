"""The import contracts catch the layering mistakes issue 55 planted, through a package façade too.

Each case copies the library and pyproject.toml to a temporary folder, adds one import to one module, and runs
`lint-imports` there (the contracts of [tool.importlinter]): the planted import must break a contract, and the
unplanted copy keeps them all. Before the façades named their re-exports (argent/lazy.py), the first three
passed: `from argent.runs import read_checkpoint` was seen as an import of the package `argent.runs` only.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

PLANTED = [
    # (module file, the import added, why it is wrong)
    ("argent/config/experiment.py", "from argent.runs import read_checkpoint",
     "the typed config reads a checkpoint through the runs façade (config sits below runs.folder)"),
    ("argent/tracking/mirror.py", "from argent.tables import run",
     "the MLflow mirror imports a stage"),
    ("argent/tracking/tracker.py", "from argent.engine import progress",
     "the tracker imports the engine that imports it (a runtime cycle)"),
    ("argent/geometry.py", "from argent.config import limits",
     "the shared floor's bottom imports a floor above it"),
    ("argent/wordnet.py", "from argent.runs import staging",
     "a shared utility imports the run folders' staging"),
    ("argent/models/encoders.py", "from argent.losses import contrastive",
     "the models and the losses are independent"),
]


def copy_of_the_project(dest: Path) -> Path:
    shutil.copytree(ROOT / "argent", dest / "argent", ignore=shutil.ignore_patterns("__pycache__", "*.zip"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint(project: Path) -> subprocess.CompletedProcess:
    # The copy, not the installed (editable) library, is what grimp imports: it comes first on the path.
    env = {"PATH": str(LINT_IMPORTS.parent), "PYTHONPATH": str(project), "HOME": str(project)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=project, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    project = copy_of_the_project(tmp_path_factory.mktemp("pristine"))
    proc = lint(project)
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    return project


@pytest.mark.parametrize("module, line, why", PLANTED, ids=[p[0].removeprefix("argent/") for p in PLANTED])
def test_a_planted_layering_mistake_breaks_a_contract(pristine, tmp_path, module, line, why):
    project = tmp_path / "planted"
    shutil.copytree(pristine, project)
    path = project / module
    path.write_text(path.read_text() + f"\n{line}  # planted: {why}\n")
    proc = lint(project)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, (why, proc.stdout[-2000:])
    dotted = module.removesuffix(".py").replace("/", ".")
    assert dotted in proc.stdout, (why, proc.stdout[-2000:])  # the report names the planted import's module
