"""`argent --help`, `argent --version`, `argent <verb> --help` and a usage error answer without loading
a heavy package: each verb's module imports them inside the function that uses them, after argparse.
A behaviour test (what a fresh interpreter imported), not a stopwatch: each case runs in its own process."""

from __future__ import annotations

import json
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


def test_version_is_the_installed_package_s() -> None:
    from importlib.metadata import version

    out = subprocess.run([sys.executable, "-m", "argent", "--version"], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == f"argent {version('argent')}"
