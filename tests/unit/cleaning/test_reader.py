"""HierarCaps readers: format, verbatim rows, bad rows by row (skip counts, strict stops), real data."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest
from PIL import Image

from argent.data.formats.hierarcaps import (
    HierarCapsSample,
    read_header_raw,
    read_hierarcaps,
    read_hierarcaps_expanded,
    read_hierarcaps_records,
)
from argent.data.policy import BadDataError, BadDataPolicy
from tests.fixtures import SHARED

HIERARCAPS = SHARED / "hierarcaps"
URL = "http://images.cocodataset.org/val2014/COCO_val2014_{:012d}.jpg"


def _chain(i: int) -> str:
    return f"thing {i} => small thing {i} => small thing {i} on a table => A small thing number {i} on a wooden table."


def _write_images(folder: Path, image_ids: list[int]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for image_id in image_ids:
        Image.new("RGB", (8, 8), (image_id % 255, 0, 0)).save(folder / f"COCO_val2014_{image_id:012d}.jpg")


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "captions", "image_url"])
        writer.writerows(rows)


@pytest.fixture
def bad_fixture(tmp_path: Path) -> tuple[Path, Path]:
    """8 rows: rows 3 (image missing), 5 (3 levels), 7 (duplicate id of row 1) are bad."""
    rows = [[str(i), _chain(i), URL.format(100 + i)] for i in range(8)]
    rows[4][1] = "thing => small thing => A small thing on a table."  # row 5: only 3 levels
    rows[6][0] = "0"  # row 7 repeats row 1's id
    _write_csv(tmp_path / "hc.csv", rows)
    _write_images(tmp_path / "images", [100 + i for i in range(8) if i != 2])  # row 3's image missing
    return tmp_path / "hc.csv", tmp_path / "images"


def test_reads_levels_image_and_verbatim_row(tmp_path: Path) -> None:
    multiline = "a => a b => a b c => A caption with a, comma\nand a line break."
    _write_csv(tmp_path / "hc.csv", [["7", multiline, URL.format(42)], ["8", _chain(8), URL.format(43)]])
    _write_images(tmp_path / "images", [42, 43])
    records, rejected = read_hierarcaps_records(tmp_path / "hc.csv", tmp_path / "images")
    assert rejected == []
    first = records[0].sample
    assert first == HierarCapsSample("7", ("a", "a b", "a b c", "A caption with a, comma\nand a line break."), 42,
                                     tmp_path / "images" / "COCO_val2014_000000000042.jpg")
    text = (tmp_path / "hc.csv").read_bytes().decode()  # csv.writer ends rows with \r\n
    # header + the two records reassemble the file exactly
    assert read_header_raw(tmp_path / "hc.csv") + records[0].raw + records[1].raw == text
    assert [r.row for r in records] == [1, 2]
    assert read_hierarcaps(tmp_path / "hc.csv", None)[1].image_path is None


def test_skip_mode_reports_each_bad_row_and_keeps_the_rest(bad_fixture: tuple[Path, Path]) -> None:
    csv_path, images = bad_fixture
    policy = BadDataPolicy("skip")
    records, rejected = read_hierarcaps_records(csv_path, images, policy)
    assert [(r.row, r.id, r.reason) for r in rejected] == [
        (3, "2", "missing_image"), (5, "4", "wrong_level_count"), (7, "0", "duplicate_id")]
    assert policy.counts == {"duplicate_id": 1, "missing_image": 1, "wrong_level_count": 1}
    assert [r.row for r in records] == [1, 2, 4, 6, 8]  # nothing else lost
    assert [r.sample.id for r in records] == ["0", "1", "3", "5", "7"]


@pytest.mark.parametrize("kind, reason", [
    ("image", "missing image"), ("levels", "wrong level count"), ("duplicate", "duplicate id")])
def test_strict_mode_stops_naming_file_and_row(tmp_path: Path, kind: str, reason: str) -> None:
    rows = [[str(i), _chain(i), URL.format(100 + i)] for i in range(6)]
    if kind == "levels":
        rows[3][1] = "thing => small thing => A small thing on a table."
    if kind == "duplicate":
        rows[3][0] = "1"
    _write_csv(tmp_path / "hc.csv", rows)
    _write_images(tmp_path / "images", [100 + i for i in range(6) if not (kind == "image" and i == 3)])
    with pytest.raises(BadDataError) as err:
        read_hierarcaps(tmp_path / "hc.csv", tmp_path / "images", BadDataPolicy("strict"))
    message = str(err.value)
    assert str(tmp_path / "hc.csv") in message and "row 4 (id=" in message and reason in message


def test_missing_column_is_an_error_in_both_modes(tmp_path: Path) -> None:
    (tmp_path / "hc.csv").write_text("id,caps,image_url\n0,a => b => c => d,x/COCO_val2014_000000000001.jpg\n")
    with pytest.raises(BadDataError, match="missing column"):
        read_hierarcaps(tmp_path / "hc.csv", None, BadDataPolicy("skip"))


def test_empty_level_and_url_without_id_are_bad_rows(tmp_path: Path) -> None:
    _write_csv(tmp_path / "hc.csv", [["0", "a =>  => c => d", URL.format(1)], ["1", _chain(1), "http://x/none.jpg"],
                                     ["2", _chain(2), URL.format(2)]])
    policy = BadDataPolicy("skip")
    samples = read_hierarcaps(tmp_path / "hc.csv", None, policy)
    assert [s.id for s in samples] == ["2"]
    assert policy.counts == {"bad_image_url": 1, "empty_level": 1}


def test_expanded_reader(tmp_path: Path) -> None:
    body = "positive,negative,image_url\n" \
           f"a => b => c => d,e => f => g => h,{URL.format(5)}\n" \
           f"a => b => c,e => f => g => h,{URL.format(6)}\n"
    (tmp_path / "x.csv.gz").write_bytes(gzip.compress(body.encode()))
    policy = BadDataPolicy("skip")
    rows = read_hierarcaps_expanded(tmp_path / "x.csv.gz", policy)
    assert [(r.row, r.positive, r.negative, r.image_id) for r in rows] == [(1, ("a", "b", "c", "d"), ("e", "f", "g", "h"), 5)]
    assert policy.counts == {"wrong_level_count": 1}


@pytest.mark.shared_data
def test_real_hierarcaps_test_set() -> None:
    if not (HIERARCAPS / "hierarcaps_test.csv").is_file():
        pytest.skip(f"real HierarCaps not found at {HIERARCAPS}")
    policy = BadDataPolicy("strict")
    records, rejected = read_hierarcaps_records(HIERARCAPS / "hierarcaps_test.csv", HIERARCAPS / "images", policy)
    samples = [r.sample for r in records]
    assert len(samples) == 1000 and rejected == []
    assert len({s.image_id for s in samples}) == 1000
    assert all(s.image_path is not None and s.image_path.is_file() for s in samples)
    assert samples[0].levels[0] == "table" and samples[0].image_id == 301718
    with open(HIERARCAPS / "hierarcaps_test.csv", newline="") as f:
        originals = list(csv.DictReader(f))
    assert [r["captions"] for r in originals] == [" => ".join(s.levels) for s in samples]
    expanded = read_hierarcaps_expanded(HIERARCAPS / "hierarcaps_test_expanded.csv.gz", policy)
    assert len(expanded) == 23479
    assert {s.image_id for s in samples} <= {e.image_id for e in expanded}
