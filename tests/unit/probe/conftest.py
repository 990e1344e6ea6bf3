"""The probe tests' shared taxonomy and its images (tests/fixtures/probe.py), built once per module."""

import pytest

from tests.fixtures import probe_hierarchy, probe_images


@pytest.fixture(scope="module")
def hier():
    return probe_hierarchy()


@pytest.fixture(scope="module")
def images(hier):
    return probe_images(hier)
