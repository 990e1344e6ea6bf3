"""The negatives stage's part of the workflow config: the ``negatives:`` section, typed and checked.

Every knob of the generator (docs/method.md §7.1) is a field of ``MiningConfig``, the
one source of its defaults: the workflow schema lists the keys without defaults of its own, and a
test keeps the two key lists equal. Parsing goes through ``argent.config.from_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, from_dict, load_config, section_of

MODES = ("concrete", "abstract", "random")
OPERATORS = ("replace_noun", "replace_att", "swap_noun", "swap_att")
SLOT_POS = ("noun", "adj")
FORMATS = ("auto", "grounded", "hierarcaps", "table")  # caption sources (argent.negatives.io reads them)


@dataclass
class MiningConfig:
    """Hard-negative generation settings.

    - ``modes``: slot-choice modes to mine, one negative per (caption, mode) at most.
    - ``operators``: allowed edit operators; for a slot they are tried in a seeded random order.
    - ``slot_pos``: parts of speech that can be edited (verbs have no operator here).
    - ``concrete_threshold``: ``concrete`` mode keeps slots with c ≥ this (Brysbaert 1–5 scale).
    - ``top_k``: slots tried per caption, in rank order (0 = every ranked slot); the edit goes to the
      best-ranked slot that yields a valid negative. ``top_k: 1`` edits only the top slot.
    - ``temperature``: 0 ranks slots by ĉ (highest first in ``concrete``, lowest in ``abstract``);
      > 0 samples the order ∝ exp(±ĉ/T) instead (Gumbel top-k). ``random`` mode ignores ĉ.
    - ``unrated``: ``skip`` (words with no rating are not slots) or ``default`` (ranked at
      ``unrated_value``; their recorded c stays null, ĉ uses the default).
    - ``max_c_delta``: reject a replacement whose rating differs from the old word's by more than
      this (4.0, the scale's span, disables the filter; unrated words pass).
    - ``noun_senses``: noun senses tried for co-hyponyms, in WordNet order (1 = the first sense
      only, docs/method.md §7.1); ``adj_senses`` likewise for antonyms.
    - ``fix_articles``: rewrite "a"/"an" before an edited word to agree with it.
    - ``nltk_data``: folder holding ``corpora/wordnet.zip`` ("" = NLTK_DATA, then NLTK's defaults);
      ``argent mine --nltk-data`` overrides it.
    - ``wordnet_zip``: the workflow's WordNet source: a ``wordnet.zip`` anywhere, which the workflow
      copies into ``<results>/nltk_data/corpora/`` and hands to ``argent mine --nltk-data``; ""
      leaves the variants that need mined negatives out of the workflow. The miner does not read it.
    """

    modes: list[str] = field(default_factory=lambda: list(MODES))
    operators: list[str] = field(default_factory=lambda: list(OPERATORS))
    slot_pos: list[str] = field(default_factory=lambda: list(SLOT_POS))
    concrete_threshold: float = 4.0
    top_k: int = 0
    temperature: float = 0.0
    unrated: Literal["skip", "default"] = "skip"
    unrated_value: float = 3.0
    max_c_delta: float = 4.0
    noun_senses: int = 1
    adj_senses: int = 1
    fix_articles: bool = True
    seed: int = 0
    nltk_data: str = ""
    wordnet_zip: str = ""

    def __post_init__(self) -> None:
        for name, values, allowed in (("modes", self.modes, MODES), ("operators", self.operators, OPERATORS),
                                      ("slot_pos", self.slot_pos, SLOT_POS)):
            bad = [v for v in values if v not in allowed]
            if bad or not values:
                raise ConfigError(f"negatives.{name}: {values!r} must be a non-empty subset of {list(allowed)}")
            if len(set(values)) != len(values):
                raise ConfigError(f"negatives.{name}: {values!r} lists a value twice")
        if not 1.0 <= self.concrete_threshold <= 5.0:
            raise ConfigError("negatives.concrete_threshold: must lie on the 1–5 scale")
        if not 1.0 <= self.unrated_value <= 5.0:
            raise ConfigError("negatives.unrated_value: must lie on the 1–5 scale")
        if self.top_k < 0 or self.noun_senses < 1 or self.adj_senses < 1:
            raise ConfigError("negatives: top_k must be ≥ 0, noun_senses and adj_senses ≥ 1")
        if self.temperature < 0 or self.max_c_delta < 0:
            raise ConfigError("negatives: temperature and max_c_delta must be ≥ 0")


def mining_config(data: dict[str, Any] | None = None) -> MiningConfig:
    """``MiningConfig`` from the ``negatives:`` mapping; unknown keys and wrong types raise ``ConfigError``."""
    return from_dict(MiningConfig, data or {}, "negatives")


def negatives_section(raw: dict[str, Any], base_dir: Path | None = None) -> MiningConfig:
    """Check a workflow config mapping's ``negatives:`` section (absent: every default)."""
    return mining_config(section_of(raw, "negatives"))


def load_negatives_section(config: str | Path | None, overrides: list[str] | tuple[str, ...] = (),
                           merge_default: bool = True) -> MiningConfig:
    """The ``negatives:`` section of the workflow config file merged over config/config.yaml as Snakemake
    merges it (``merge_default=False``: the file alone; none: defaults), after
    ``negatives.<key>=<value>`` overrides (argent.config.workflow, the one door)."""
    return load_config(config, overrides, merge_default=merge_default, only="negatives").negatives
