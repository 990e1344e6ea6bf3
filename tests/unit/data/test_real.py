"""The real reference data in ../shared/data reads through the format readers (skipped when absent)."""

from __future__ import annotations

import json
import re

import pytest

from argent.data.formats.sugarcrepe import CATEGORIES, read_sugarcrepe
from argent.data.images import image_size_of, load_image
from argent.data.policy import BadDataError, BadDataPolicy
from tests.fixtures import SHARED

SUGARCREPE, HIERARCAPS_IMAGES = SHARED / "sugarcrepe", SHARED / "hierarcaps" / "images"

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not (SUGARCREPE.is_dir() and HIERARCAPS_IMAGES.is_dir()),
                       reason=f"real data not found at {SHARED} (../shared/data is optional)"),
]


def test_sugarcrepe_items_with_hierarcaps_images():
    policy = BadDataPolicy("skip")
    items = read_sugarcrepe(SUGARCREPE, HIERARCAPS_IMAGES, policy)
    # Independent count: items whose 12-digit COCO id is among COCO_val2014_<id>.jpg.
    ids = {int(re.search(r"(\d+)\.jpg$", p.name).group(1)) for p in HIERARCAPS_IMAGES.glob("*.jpg")}
    total = expected = 0
    for category in CATEGORIES:
        data = json.loads((SUGARCREPE / f"{category}.json").read_text())
        total += len(data)
        expected += sum(int(entry["filename"].split(".")[0]) in ids for entry in data.values())
    assert total == 7511 and expected == 1544
    assert len(items) == 1544
    assert policy.counts == {"missing_image": 7511 - 1544}
    assert {i.category for i in items} == set(CATEGORIES)
    for item in items[:: 97]:
        assert item.image_path.name == f"COCO_val2014_{int(item.image_path.stem.split('_')[-1]):012d}.jpg"
        assert item.caption and item.negative_caption and item.caption != item.negative_caption
        assert load_image(item.image_path).mode == "RGB"
    with pytest.raises(BadDataError, match="missing image"):
        read_sugarcrepe(SUGARCREPE, HIERARCAPS_IMAGES, BadDataPolicy("strict"))


def test_hierarcaps_images_have_readable_headers():
    paths = sorted(HIERARCAPS_IMAGES.glob("*.jpg"))
    assert len(paths) == 1000
    assert all(image_size_of(p) is not None for p in paths)
