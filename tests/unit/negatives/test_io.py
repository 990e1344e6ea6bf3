"""argent/negatives/io.py reads HierarCaps through the one reader (argent/data/formats/hierarcaps.py):
its bad rows are skipped and counted, or, strict, an error naming the file and the row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from argent.data.policy import BadDataError, BadDataPolicy
from argent.negatives.io import iter_source

URL = "http://images.cocodataset.org/val2014/COCO_val2014_{:012d}.jpg"


def hierarcaps(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "captions", "image_url"])
        writer.writerows(rows)
    return path


def test_mining_reads_hierarcaps_through_the_format_reader_and_its_policy(tmp_path):
    path = hierarcaps(tmp_path / "hierarcaps_test.csv", [
        ["0", "animal => dog => brown dog => A brown dog on grass.", URL.format(1)],
        ["1", "vehicle => car => A red car.", URL.format(2)],  # three levels: a bad row
        ["2", "food => fruit => apple => An apple on a table.", URL.format(3)],
    ])
    policy = BadDataPolicy("skip")
    assert list(iter_source(str(path), policy=policy)) == [("0", "A brown dog on grass."),
                                                           ("2", "An apple on a table.")]
    assert policy.counts == {"wrong_level_count": 1}
    with pytest.raises(BadDataError, match=rf"{path}: row 2 \(id='1'\): captions must be 4 non-empty levels"):
        list(iter_source(str(path), "hierarcaps", BadDataPolicy("strict")))
