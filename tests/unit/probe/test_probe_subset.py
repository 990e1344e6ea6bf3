"""The probe's per-class subset: the first N images of each class, in the folder's order."""

from pathlib import Path

import pytest

from argent.config import ConfigError
from argent.data.formats.imagefolder import ClassificationSet
from argent.probe.config import ProbeOptions
from argent.probe.run import _first_per_class


def test_first_per_class_keeps_the_first_images_of_each_class():
    samples = [(Path(f"{c}/{i}.png"), c) for c in (0, 1) for i in range(5)]
    data = ClassificationSet(Path("."), samples, ["a", "b"], ["A", "B"])
    two = _first_per_class(data, 2)
    assert two.samples == [samples[0], samples[1], samples[5], samples[6]]
    assert _first_per_class(data, 0) is data and _first_per_class(data, 9).samples == samples


def test_a_negative_per_class_is_refused():
    with pytest.raises(ConfigError, match="per_class"):
        ProbeOptions(per_class=-1)
