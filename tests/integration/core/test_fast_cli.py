"""`argent --help`, `argent --version`, `argent <verb> --help` and a usage error answer without loading
a heavy package: each verb's module imports them inside the function that uses them, after argparse.
A behaviour test (what a fresh interpreter imported), not a stopwatch: each case runs in its own process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from argent.cli import VERBS
from tests.fixtures import ROOT

HEAVY = ("torch", "mlflow", "sklearn", "scipy", "matplotlib", "pandas", "polars", "optuna")
PROBE = f"""
import json, sys
from argent.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({{"code": code, "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""


def answer(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_verbs_help_loads_no_heavy_package(verb: str) -> None:
    got = answer(verb, "--help")
    assert got == {"code": 0, "heavy": []}


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("check",), ("plan",)])
def test_the_basics_and_a_usage_error_load_no_heavy_package(argv: tuple[str, ...]) -> None:
    got = answer(*argv)
    assert got["heavy"] == [] and got["code"] == (2 if argv[0] in VERBS else 0)


def test_version_is_the_installed_package_s_and_the_checkout_s_commit(tmp_path) -> None:
    from importlib.metadata import version

    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    out = subprocess.run([sys.executable, "-m", "argent", "--version"], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.startswith(f"argent {version('argent')} (commit {head}")
    # a copy outside any git checkout (an installed package) says so instead of naming a commit
    shutil.copytree(ROOT / "argent", tmp_path / "argent", ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-c", "import sys; from argent.cli import main; sys.exit(main(['--version']))"],
                         cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.stdout.strip().endswith("(commit unknown: not run from a git checkout)"), out.stdout
