"""A small lexicon-based tagger and noun-phrase chunker for captions (argent's choice; read the limits).

Why not a trained parser (docs/method.md §7.1): the usual choice, spaCy ``en_core_web_sm``, cannot be
installed here, and NLTK's trained taggers need data that is not available offline; WordNet is. So
argent tags captions with

1. hand-written closed-class lists (``lexicon.py``): determiners, numbers, pronouns, prepositions,
   conjunctions, auxiliaries, common adverbs, and spatial relation words/phrases ("left of", "on top of");
2. WordNet 3.0 for open-class words: a word may be a noun / adjective / verb / adverb when WordNet's
   morphology (``morphy``) finds a base form of that part of speech; how likely each reading is comes
   from WordNet's sense-tagged frequency counts (SemCor ``cntlist``); attribute-family words
   (colours, sizes, materials, fills) are always adjective-capable;
3. a few context rules: an open word right after a pronoun/auxiliary, an ``-ing``/``-ed`` verb form
   not after a determiner, and a verb form after a noun followed by a determiner or preposition
   (when WordNet counts favour the verb reading) are verbs; every maximal run of the remaining
   noun/adjective-capable words is a noun phrase whose head is its last likely noun (or, after a
   determiner, its last noun-capable word); words before the head are adjectives when they are more
   often adjectives than nouns (or are attribute-family words) and noun modifiers otherwise.

Chunks are ``det? num? (adj | noun)* noun``. Limits, plainly: no sentence-level syntax, so present-tense
verbs after a noun at the end of a clause ("a dog runs.") become nouns; gerund modifiers after a
conjunction ("and cooking pot") become verbs; words missing from WordNet (misspellings, most names) are
never edited; proper nouns are only recognised as capitalised words unknown to WordNet. For argent
the tagger decides which words are *edit slots*; a mis-tag costs a weaker negative, not a wrong label,
and the tests measure it on real HierarCaps captions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from argent.negatives.lexicon import (
    ADVERBS,
    AUXILIARIES,
    CONJUNCTIONS,
    DETERMINERS,
    FAMILY_OF,
    NUMBERS,
    PREPOSITIONS,
    PRONOUNS,
    RELATION_PHRASES,
    RELATION_WORDS,
)

TOKEN_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*|'[A-Za-z]+|\d+(?:[.,:]\d+)*|\S")
"""Words (hyphenated kept whole), clitics ('s), numbers, and single punctuation marks."""

# Words after which an open word starts a noun phrase (not quantifiers like "both", which float:
# "a man and a woman both holding utensils").
NP_OPENERS = frozenset("a an the this that these those its his her their our my your another every each no".split())

CLOSED_TAGS = {"DET", "NUM", "PRON", "ADP", "CONJ", "AUX", "ADV", "REL", "PUNCT"}


@dataclass(frozen=True)
class Token:
    """One token: ``text`` at ``[start, end)`` of the caption, its ``tag`` and ``lemma``.

    ``chunk`` is the index of the noun phrase it belongs to (-1: none); ``head`` marks the phrase's head.
    """

    text: str
    start: int
    end: int
    tag: str
    lemma: str
    chunk: int = -1
    head: bool = False

    @property
    def lower(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Chunk:
    """Noun phrase: tokens ``[start, end)`` (end exclusive) with head token index ``head``."""

    start: int
    end: int
    head: int


@dataclass(frozen=True)
class Parse:
    caption: str
    tokens: tuple[Token, ...]
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True)
class WordInfo:
    """WordNet readings of a lower-case word: base form per part of speech (None: no such reading)."""

    noun: str | None
    adj: str | None
    verb: str | None
    adv: str | None
    noun_count: int  # SemCor counts of the word's lemma in its noun senses
    adj_count: int
    verb_count: int

    @property
    def open_class(self) -> bool:
        return any((self.noun, self.adj, self.verb, self.adv))

    @property
    def likely_adj(self) -> bool:
        """More often an adjective than a noun (attribute-family words always)."""
        return self.adj is not None and (self.noun is None or self.adj_count > self.noun_count)

    @property
    def likely_noun(self) -> bool:
        return self.noun is not None and not self.likely_adj


def tokenize(caption: str) -> list[tuple[str, int, int]]:
    """(text, start, end) for every token of ``caption``; the token index is what ``slot`` counts."""
    return [(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(caption)]


class LexiconTagger:
    """Tags and chunks captions with WordNet + closed-class lists (see module docstring).

    ``wordnet``: an NLTK WordNet reader (``argent.wordnet.load_wordnet``). Word lookups are
    cached per tagger.
    """

    def __init__(self, wordnet: Any):
        self.wn = wordnet
        self._info: dict[str, WordInfo] = {}
        self._sense_counts: dict[str, int] | None = None

    # ---- word level --------------------------------------------------------------------------

    def _sense_count(self, sense_key: str) -> int:
        """SemCor count of one sense (WordNet's ``cntlist.rev``), read whole once: NLTK's
        ``Lemma.count()`` binary-searches the zipped file on every call, ~0.4 ms each."""
        if self._sense_counts is None:
            counts: dict[str, int] = {}
            with self.wn.open("cntlist.rev") as fh:  # "<sense key> <sense number> <count>" per line
                for line in fh:
                    key, _, count = line.split()
                    counts[key] = int(count)
            self._sense_counts = counts
        return self._sense_counts.get(sense_key, 0)

    def _count(self, base: str, pos: str) -> int:
        poses = ("a", "s") if pos == "a" else (pos,)
        total = 0
        for synset in self.wn.synsets(base, pos):
            if synset.pos() not in poses:
                continue
            for lemma in synset.lemmas():
                if lemma.name().lower() == base:
                    total += self._sense_count(lemma.key())
        return total

    def info(self, word: str) -> WordInfo:
        """WordNet readings of ``word`` (lower case), cached."""
        cached = self._info.get(word)
        if cached is not None:
            return cached
        bases = {pos: self.wn.morphy(word, pos) for pos in ("n", "a", "v", "r")}
        adj = bases["a"] or (word if word in FAMILY_OF else None)
        info = WordInfo(
            noun=bases["n"], adj=adj, verb=bases["v"], adv=bases["r"],
            noun_count=self._count(bases["n"], "n") if bases["n"] else 0,
            # Family words count as adjectives whatever SemCor says ("glass vase", "wood bridge").
            adj_count=(1 << 30) if word in FAMILY_OF else (self._count(bases["a"], "a") if bases["a"] else 0),
            verb_count=self._count(bases["v"], "v") if bases["v"] else 0,
        )
        self._info[word] = info
        return info

    # ---- sentence level ----------------------------------------------------------------------

    def parse(self, caption: str) -> Parse:
        spans = tokenize(caption)
        words = [text.lower() for text, _, _ in spans]
        tags: list[str | None] = [self._closed_tag(w) for w in words]
        self._mark_relations(words, tags)
        infos = [None if tags[i] else self.info(w) for i, w in enumerate(words)]
        for i, info in enumerate(infos):
            if info is not None and not info.open_class:
                tags[i] = "PROPN" if i > 0 and spans[i][0][:1].isupper() else "X"
        for i in range(len(infos)):
            if tags[i] is None and self._is_verb(i, words, tags, infos):
                tags[i] = "VERB"
        for i, info in enumerate(infos):  # adverb-only words
            if tags[i] is None and info.noun is None and info.adj is None:
                tags[i] = "ADV" if info.adv else "VERB"
        heads, chunk_of = self._chunk(words, tags, infos)
        tokens = []
        for i, (text, start, end) in enumerate(spans):
            tag = tags[i]
            info = infos[i]
            if tag == "NOUN":
                lemma = info.noun
            elif tag == "ADJ":
                lemma = info.adj
            elif tag == "VERB" and info is not None:
                lemma = info.verb or words[i]
            else:
                lemma = words[i]
            tokens.append(Token(text, start, end, tag, lemma, chunk_of.get(i, -1), i in heads))
        chunks = []
        for c, head in enumerate(sorted(heads)):
            members = [i for i, k in chunk_of.items() if k == c]
            chunks.append(Chunk(min(members), max(members) + 1, head))
        return Parse(caption, tuple(tokens), tuple(chunks))

    @staticmethod
    def _closed_tag(word: str) -> str | None:
        if not word[0].isalnum() and word[0] != "'":
            return "PUNCT"
        if word[0].isdigit() or word in NUMBERS:
            return "NUM"
        if word in DETERMINERS:
            return "DET"
        if word in PRONOUNS:
            return "PRON"
        if word in AUXILIARIES:
            return "AUX"
        if word in RELATION_WORDS:
            return "REL"
        if word in PREPOSITIONS:
            return "ADP"
        if word in CONJUNCTIONS:
            return "CONJ"
        if word in ADVERBS or word.startswith("'"):
            return "ADV"
        return None

    @staticmethod
    def _mark_relations(words: list[str], tags: list[str | None]) -> None:
        for i in range(len(words)):
            for phrase in RELATION_PHRASES:
                if tuple(words[i:i + len(phrase)]) == phrase:
                    for j in range(i, i + len(phrase)):
                        tags[j] = "REL"

    def _is_verb(self, i: int, words: list[str], tags: list[str | None], infos: list[WordInfo | None]) -> bool:
        info = infos[i]
        word = words[i]
        if info.verb is None or word in FAMILY_OF:
            return False
        if info.noun is None and info.adj is None:
            return True
        prev_word = words[i - 1] if i else ""
        prev_tag = tags[i - 1] if i else "START"
        next_tag = tags[i + 1] if i + 1 < len(words) else "END"
        inflected = info.verb != word
        participle = inflected and (word.endswith("ing") or word.endswith("ed"))
        if prev_tag in ("PRON", "AUX"):
            # "he looks", "are sitting"; but "is red" / "is wooden" keep their adjective reading.
            return participle or prev_tag == "PRON" or not info.adj
        if prev_word == "to" and prev_tag == "ADP":
            return info.verb_count > info.noun_count
        if participle:
            if prev_word in NP_OPENERS or prev_tag == "NUM":
                return False  # "a living room", "the chopped vegetable"
            prev_info = infos[i - 1] if i else None
            if prev_info is not None and prev_info.likely_adj:
                return False  # "large living room"
            nxt = infos[i + 1] if i + 1 < len(words) else None
            noun_next = nxt is not None and nxt.noun is not None and nxt.noun_count >= nxt.verb_count
            if noun_next and word.endswith("ed") and info.adj:
                return False  # "assorted bowls": participial adjective
            if noun_next and word.endswith("ing") and prev_tag == "ADP":
                return False  # "in parking lot": gerund modifier of the next noun
            return True
        prev_info = infos[i - 1] if i else None
        after_noun = prev_info is not None and tags[i - 1] is None and prev_info.likely_noun
        return (after_noun and next_tag in ("DET", "ADP", "PRON", "NUM", "ADV", "REL")
                and info.verb_count > info.noun_count)

    def _chunk(
        self, words: list[str], tags: list[str | None], infos: list[WordInfo | None]
    ) -> tuple[set[int], dict[int, int]]:
        """Tag every remaining open word NOUN/ADJ run by run; returns head indices and token -> chunk."""
        heads: set[int] = set()
        chunk_of: dict[int, int] = {}
        i = 0
        n = len(words)
        while i < n:
            if tags[i] is not None:
                i += 1
                continue
            run = []
            while i < n and tags[i] is None:
                run.append(i)
                i += 1
            before = run[0] - 1
            opened = before >= 0 and (words[before] in NP_OPENERS or tags[before] in ("NUM", "DET", "ADP"))
            nouny = [j for j in run if infos[j].noun is not None]
            likely = [j for j in nouny if infos[j].likely_noun]
            head = likely[-1] if likely else (nouny[-1] if nouny and opened else None)
            for j in run:
                if head is not None and j == head:
                    tags[j] = "NOUN"
                elif head is not None and j < head:
                    tags[j] = "ADJ" if infos[j].likely_adj or infos[j].noun is None else "NOUN"
                else:  # after the head or no head: predicative adjectives
                    tags[j] = "ADJ" if infos[j].adj is not None else "NOUN"
            if head is None:
                continue
            chunk = len(heads)
            heads.add(head)
            start = run[0]
            while start - 1 >= 0 and tags[start - 1] in ("DET", "NUM"):
                start -= 1
            for j in range(start, head + 1):
                chunk_of[j] = chunk
        return heads, chunk_of
