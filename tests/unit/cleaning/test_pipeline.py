"""`argent clean` end to end on a planted fixture, with a tiny deterministic fake scorer.

Fixture: 15 HierarCaps rows in 4 themed groups of 3 plus 3 rare singletons.
- planted duplicate images: rows 4 and 5 (D1, D2) are copies of one picture with two captions;
- planted near-synonym captions: rows 7 and 8 (N1, N2) "a puppy chasing a crimson ball on the lawn" /
  "a dog chasing a red ball on the grass" (synonyms under the fake scorer);
- planted rare captions: rows 3, 10, 14 (astronaut, violinist, glacier) share no word with any other
  image, while every other caption shares its group's words.
The fake scorer is a bag-of-words cosine over a hidden description of each picture (what the image
"shows"), with a synonym table; every expectation below is derived from the construction.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from argent.cleaning.cli import main
from argent.cleaning.config import CleanSection
from argent.cleaning.image_scorers import CheckpointScorer
from argent.cleaning.run import CleanJob, run
from argent.config import model_from
from argent.data.hiershapes.cli import main as synth
from argent.models import build_model
from tests.fixtures import (
    CLEAN_ROWS,
    COCO_URL,
    FakeScorer,
    args_for,
    chain,
    image_ids,
    words,
    write_fixture,
)

AMBIGUOUS = {"4", "5", "7", "8"}  # the planted duplicate images and near-synonym captions
RARE = {"3", "10", "14"}  # the planted rare captions


def bag_cosine(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    va = {w: wa.count(w) for w in wa}
    vb = {w: wb.count(w) for w in wb}
    dot = sum(va[w] * vb.get(w, 0) for w in va)
    return dot / (np.sqrt(sum(v * v for v in va.values())) * np.sqrt(sum(v * v for v in vb.values())))


def test_planted_ambiguous_samples_are_the_removed_ones(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    summary = run(args_for(csv_path, images, tmp_path / "out"), scorer=scorer)
    scores = pl.read_csv(tmp_path / "out" / "clean_scores.csv", schema_overrides={"id": pl.String})
    removed = set(scores.filter(~pl.col("kept"))["id"])
    assert removed == AMBIGUOUS
    reasons = dict(zip(scores["id"], scores["reason"]))
    # D2's image prefers D1's caption; D1's caption ties between the two copies of the picture
    assert reasons["5"] == "ambiguous_caption" and reasons["4"] == "ambiguous_image"
    assert {reasons["7"], reasons["8"]} <= {"ambiguous_caption", "ambiguous_image"}
    assert summary["counts"] == {"rows": 15, "samples": 15, "mutual_top1": 11, "kept": 11, "removed": 4,
                                 "shortfall": 0, "reasons": {"kept": 11, "ambiguous_caption": 2, "ambiguous_image": 2,
                                                             "low_margin": 0, "low_alignment": 0, "below_keep": 0}}
    # alignment = the fake score of the picture with its level-4 caption, computed independently
    descriptions = {image_id: d for (_, d), image_id in zip(CLEAN_ROWS, image_ids())}
    expected = [bag_cosine(descriptions[image_id], c) for (c, _), image_id in zip(CLEAN_ROWS, image_ids())]
    np.testing.assert_allclose(scores.sort("row")["alignment"].to_numpy(), expected, atol=1e-6)


def test_clean_csv_keeps_rows_verbatim(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    run(args_for(csv_path, images, tmp_path / "out"), scorer=scorer)
    original = csv_path.read_bytes().decode().split("\r\n")
    clean = (tmp_path / "out" / "hierarcaps_clean.csv").read_bytes().decode().split("\r\n")
    assert clean[0] == original[0]
    assert clean[1:-1] == [line for line in original[1:-1] if line.split(",", 1)[0] not in AMBIGUOUS]


def test_rare_captions_form_the_pool(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    summary = run(args_for(csv_path, images, tmp_path / "out"), scorer=scorer)
    pool = pl.read_csv(tmp_path / "out" / "negative_pool.csv", schema_overrides={"id": pl.String})
    assert pool.columns == ["caption", "id", "degree"]
    assert set(pool["id"]) == RARE and pool["degree"].to_list() == [0, 0, 0]
    assert pool["id"].to_list() == ["3", "10", "14"]  # ties by row
    # every degree against a brute-force count: image j "retrieves" caption i when fewer than k=3
    # captions beat it (ties by row)
    descriptions = {image_id: d for (_, d), image_id in zip(CLEAN_ROWS, image_ids())}
    ids = image_ids()
    n = len(CLEAN_ROWS)
    s = np.array([[round(bag_cosine(descriptions[ids[j]], CLEAN_ROWS[i][0]), 9) for i in range(n)] for j in range(n)])
    brute = [sum(1 for j in range(n) if j != i and
                 sum(1 for m in range(n) if s[j, m] > s[j, i] or (s[j, m] == s[j, i] and m < i)) < 3)
             for i in range(n)]
    degrees = pl.read_csv(tmp_path / "out" / "caption_degrees.csv").sort("row")
    assert degrees["degree"].to_list() == brute
    assert summary["pool"]["pool_degree_max"] == 0 and summary["pool"]["all_degree_min"] == 0


def test_keep_count_ranks_by_alignment_then_row(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    run(args_for(csv_path, images, tmp_path / "out", keep=6), scorer=scorer)
    scores = pl.read_csv(tmp_path / "out" / "clean_scores.csv", schema_overrides={"id": pl.String}).sort("row")
    descriptions = {image_id: d for (_, d), image_id in zip(CLEAN_ROWS, image_ids())}
    alignment = [round(bag_cosine(descriptions[image_id], c), 9) for (c, _), image_id in zip(CLEAN_ROWS, image_ids())]
    eligible = [i for i in range(len(CLEAN_ROWS)) if str(i) not in AMBIGUOUS]
    expected = sorted(eligible, key=lambda i: (-alignment[i], i))[:6]
    assert set(scores.filter(pl.col("kept"))["row"].to_list()) == {i + 1 for i in expected}
    assert set(scores.filter(pl.col("reason") == "below_keep")["row"]) == {i + 1 for i in eligible if i not in expected}


def test_thresholds_mode(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    summary = run(args_for(csv_path, images, tmp_path / "out", min_alignment=0.9, min_margin=0.4),
                  scorer=scorer)
    scores = pl.read_csv(tmp_path / "out" / "clean_scores.csv", schema_overrides={"id": pl.String}).sort("row")
    descriptions = {image_id: d for (_, d), image_id in zip(CLEAN_ROWS, image_ids())}
    ids, n = image_ids(), len(CLEAN_ROWS)
    s = np.array([[round(bag_cosine(descriptions[ids[i]], CLEAN_ROWS[j][0]), 9) for j in range(n)] for i in range(n)])
    expected = []
    for i in range(n):
        margin = s[i, i] - max(max(s[i, j], s[j, i]) for j in range(n) if j != i)
        expected.append("ambiguous" if margin <= 0 else "low_margin" if margin <= 0.4
                        else "low_alignment" if s[i, i] < 0.9 else "kept")
    got = [r if not r.startswith("ambiguous") else "ambiguous" for r in scores["reason"]]
    assert got == expected
    assert "low_alignment" in got and "low_margin" in got  # B2's picture also shows a street; K2 is close to K1
    assert summary["thresholds"]["min_alignment"] == 0.9 and summary["thresholds"]["min_margin"] == 0.4


def test_bad_rows_skip_counts_them_and_loses_nothing_else(tmp_path: Path) -> None:
    extra = [["15", chain("a lighthouse on a cliff"), COCO_URL.format(99999)],          # image missing (row 16)
             ["16", "lighthouse => a lighthouse on a cliff", COCO_URL.format(1000)],      # 2 levels (row 17)
             ["3", chain("an astronaut repairing a satellite"), COCO_URL.format(1003)]]   # duplicate id (row 18)
    csv_path, images, scorer = write_fixture(tmp_path / "data", extra)
    summary = run(args_for(csv_path, images, tmp_path / "out"), scorer=scorer)
    assert summary["bad_data"]["counts"] == {"duplicate_id": 1, "missing_image": 1, "wrong_level_count": 1}
    assert [(r["row"], r["id"], r["reason"]) for r in summary["bad_data"]["rows"]] == [
        (16, "15", "missing_image"), (17, "16", "wrong_level_count"), (18, "3", "duplicate_id")]
    scores = pl.read_csv(tmp_path / "out" / "clean_scores.csv", schema_overrides={"id": pl.String})
    assert scores.height == 18  # every input row accounted for
    assert set(scores.filter(~pl.col("kept") & ~pl.col("reason").str.starts_with("bad_data"))["id"]) == AMBIGUOUS
    assert scores.filter(pl.col("kept")).height == 11


def test_bad_rows_strict_stops_with_file_and_row(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    extra = [["15", "lighthouse => a lighthouse on a cliff", COCO_URL.format(1000)]]
    csv_path, images, _ = write_fixture(tmp_path / "data", extra)
    code = main(["--csv", str(csv_path), "--images", str(images), "--out-dir", str(tmp_path / "out"),
                 "--set", "clean.bad_data=strict"])
    err = capsys.readouterr().err
    assert code == 2 and str(csv_path) in err and "row 16 (id='15')" in err and "wrong level count" in err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_same_inputs_same_files(tmp_path: Path) -> None:
    csv_path, images, scorer = write_fixture(tmp_path / "data")
    run(args_for(csv_path, images, tmp_path / "a"), scorer=scorer)
    run(args_for(csv_path, images, tmp_path / "b"), scorer=FakeScorer(scorer.descriptions))
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["caption_degrees.csv", "clean_scores.csv", "hierarcaps_clean.csv", "negative_pool.csv",
                     "summary.json", "table1.csv", "table1.md"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert [r["k"] for r in summary["table1"]] == [0, 1, 2]
    assert all(0 <= r["precision"] <= 100 and 0 <= r["recall"] <= 100 for r in summary["table1"])


def test_table1_on_the_hiershapes_hierarchy_split(tmp_path: Path) -> None:
    """The embedded benchmark's HierarCaps-format split, scored by a tiny random argent model."""
    assert synth(["--out", str(tmp_path / "hs"), "--seed", "0", "--train-scenes", "4", "--val-scenes", "2",
                  "--test-scenes", "40", "--per-class", "1", "--jobs", "1"]) in (0, None)
    split = tmp_path / "hs" / "hierarcaps"
    torch.manual_seed(0)
    model = build_model(model_from("tiny", {"vision_layers": 1, "text_layers": 1}), "lorentz")
    args = CleanJob(csv=split / "hierarcaps_test.csv", images=split / "images", out_dir=tmp_path / "out",
                    config=CleanSection(pool_size=10))
    summary = run(args, scorer=CheckpointScorer(model, batch_size=16, spec="checkpoint:tiny-random"))
    assert summary["counts"]["samples"] == 40
    assert [r["k"] for r in summary["table1"]] == [0, 5, 10]
    removed = [r["removed"] for r in summary["table1"]]
    assert removed[0] == 0 and 0 < removed[1] <= removed[2]
    table1 = pl.read_csv(tmp_path / "out" / "table1.csv")
    assert table1["images"].to_list() == [40, 40, 40]
    assert "| none |" in (tmp_path / "out" / "table1.md").read_text()
    kept = pl.read_csv(tmp_path / "out" / "hierarcaps_clean.csv")
    assert kept.columns == ["id", "captions", "image_url"] and kept.height == summary["counts"]["kept"]
