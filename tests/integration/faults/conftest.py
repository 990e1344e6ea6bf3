"""Fixtures of the fault tests that read a small val split (tests.fixtures.small_val_set)."""

import shutil
from pathlib import Path

import pytest

from tests.fixtures import small_val_set


@pytest.fixture(scope="session")
def _val_set(tmp_path_factory) -> Path:
    return small_val_set(tmp_path_factory.mktemp("hs_val") / "hiershapes")


@pytest.fixture
def val_dataset(_val_set, tmp_path) -> Path:
    """A private copy of a small synthesised hiershapes (2 val shards of 4 samples)."""
    return shutil.copytree(_val_set, tmp_path / "hiershapes")
