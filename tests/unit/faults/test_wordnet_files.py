"""A WordNet that is there but unreadable (a corrupt file, a download cut short) is one message naming
the file and the fix, exit 2 — in `argent taxonomy` and wherever argent loads WordNet (`argent mine`
through negatives.wordnet_zip, the tables' LCA and Jaccard)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import nltk
import pytest

from argent.wordnet import WordNetNotFound, load_wordnet


def nltk_folder(root: Path, payload: bytes) -> Path:
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "wordnet.zip").write_bytes(payload)
    return root


def truncated_zip(tmp: Path) -> bytes:
    """The first half of a zip in NLTK's wordnet/ layout: its central directory is gone."""
    whole = tmp / "whole.zip"
    with zipfile.ZipFile(whole, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("wordnet/lexnames", "".join(f"{i:02d}\tnoun.x{i}\t1\n" for i in range(2000)))
    data = whole.read_bytes()
    return data[: len(data) // 2]


@pytest.mark.parametrize("kind", ["not a zip", "truncated"])
def test_an_unreadable_wordnet_zip_is_named_with_its_fix(tmp_path, argent, kind):
    payload = b"<html>proxy error</html>" if kind == "not a zip" else truncated_zip(tmp_path)
    folder = nltk_folder(tmp_path / "nltk", payload)
    with pytest.raises(WordNetNotFound, match=r"corpora/wordnet\.zip: not a readable WordNet"):
        load_wordnet(folder)
    assert str(folder) not in nltk.data.path, "a failed folder stays off NLTK's process-wide search path"
    code, err = argent("taxonomy", "--nltk-data", folder, "--out", tmp_path / "taxonomy.tsv")
    assert code == 2 and "wordnet.zip: not a readable WordNet" in err and "Traceback" not in err, err
    assert not (tmp_path / "taxonomy.tsv").exists()


def test_taxonomy_without_wordnet_exits_2_naming_the_folder(tmp_path, argent):
    code, err = argent("taxonomy", "--nltk-data", tmp_path / "empty", "--out", tmp_path / "taxonomy.tsv")
    assert code == 2 and f"no WordNet under {tmp_path / 'empty'}" in err, err
