"""Edit operators of the hard-negative generator (docs/method.md §7.1) and the word forms they need.

- ``replace_noun``: a noun -> a WordNet co-hyponym: a single-word lemma of a sibling synset under the
  first hypernym of the noun's first sense (``noun_senses`` widens this), never a word that also
  names the noun's own synset or one of its ancestors (the caption would stay true), rated words
  preferred, number kept ("plates" -> "bowls").
- ``replace_att``: an adjective -> another value of its attribute family (``lexicon.ATTRIBUTE_FAMILIES``:
  colour, size, material, fill), else a WordNet antonym: direct, or for a satellite adjective the
  antonym of its head adjective reached through similar-to ("worn" -> head "old" -> "new").
- ``swap_noun``: exchange the heads of two noun phrases, each re-inflected to the other's number.
- ``swap_att`` (attribute binding): exchange two adjectives of different noun phrases that belong to
  the same family (or both to none).

Every operator returns candidate edits in a seeded random order; the generator applies the filters.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from argent.negatives.lexicon import FAMILY_OF, family_alternatives, indefinite_article
from argent.negatives.tagger import Parse, Token


@dataclass(frozen=True)
class Edit:
    """One candidate edit: new ``texts`` per token index; ``slot`` is the primary index."""

    operator: str
    slot: int
    old_word: str
    new_word: str
    new_lemma: str
    texts: dict[int, str]


def match_case(template: str, word: str) -> str:
    """``word`` written with ``template``'s capitalisation (lower, Capitalised or UPPER)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def render(parse: Parse, texts: dict[int, str], fix_articles: bool = True) -> str:
    """The caption with token ``i`` rewritten as ``texts[i]``; "a"/"an" right before an edited token agree."""
    texts = dict(texts)
    if fix_articles:
        for i in list(texts):
            if i > 0 and parse.tokens[i - 1].lower in ("a", "an") and (i - 1) not in texts:
                article = parse.tokens[i - 1].text
                texts[i - 1] = match_case(article, indefinite_article(texts[i]))
    out = []
    cursor = 0
    for i in sorted(texts):
        token = parse.tokens[i]
        out.append(parse.caption[cursor:token.start])
        out.append(texts[i])
        cursor = token.end
    out.append(parse.caption[cursor:])
    return "".join(out)


def regular_plural(lemma: str) -> str:
    """English's regular plural of a noun lemma (es after a sibilant, ies after a consonant + y, else s)."""
    if lemma.endswith(("s", "x", "z", "ch", "sh")):
        return lemma + "es"
    if lemma.endswith("y") and lemma[-2:-1] not in "aeiou":
        return lemma[:-1] + "ies"
    return lemma + "s"


class WordForms:
    """WordNet-backed noun inflection: irregular plurals from ``noun.exc``, else spelling rules."""

    def __init__(self, wordnet: Any):
        self.wn = wordnet
        self._irregular: dict[str, str] | None = None

    def _irregular_plurals(self) -> dict[str, str]:
        if self._irregular is None:
            plural_of: dict[str, str] = {}
            with self.wn.open("noun.exc") as fh:  # "<inflected form> <base form>" per line
                for line in fh:
                    parts = line.split()
                    if len(parts) == 2 and parts[1] not in plural_of:
                        plural_of[parts[1]] = parts[0]
            self._irregular = plural_of
        return self._irregular

    def is_plural(self, token: Token) -> bool:
        """A noun token written in a form other than its lemma (WordNet morphology: "plates", "men")."""
        return token.tag == "NOUN" and token.lower != token.lemma

    def pluralize(self, lemma: str) -> str | None:
        """Plural of ``lemma``, or None when WordNet's morphology does not map it back to ``lemma``."""
        plural = self._irregular_plurals().get(lemma) or regular_plural(lemma)
        # Guard against forms WordNet reads as another word ("mans" -> "man" is fine, "gas" -> "ga" not).
        return plural if self.wn.morphy(plural, "n") == lemma else None

    def inflect(self, lemma: str, plural: bool) -> str | None:
        return self.pluralize(lemma) if plural else lemma


def _usable(name: str) -> bool:
    """Single plain lower-case word: no multi-word lemmas, names or hyphenations."""
    return name.isalpha() and name.islower()


class Operators:
    """The four operators over one WordNet; candidate lists are cached per lemma."""

    def __init__(self, wordnet: Any, noun_senses: int = 1, adj_senses: int = 1):
        self.wn = wordnet
        self.forms = WordForms(wordnet)
        self.noun_senses = noun_senses
        self.adj_senses = adj_senses
        self._noun_data: Any = None
        self.co_hyponyms = lru_cache(maxsize=200_000)(self._co_hyponyms)
        self.antonyms = lru_cache(maxsize=50_000)(self._antonyms)

    # ---- word candidates -----------------------------------------------------------------------

    def first_hypernym(self, synset: Any) -> Any | None:
        """The first hypernym (or instance hypernym) of a noun synset in WordNet's pointer order, or None.

        NLTK keeps a synset's pointers in a set, so ``synset.hypernyms()[0]`` changes from one
        process to the next (string hashing is salted); the order is read from the database line.
        """
        if self._noun_data is None:  # opening a zipped file decompresses it whole: keep one handle
            self._noun_data = self.wn.open("data.noun")
        self._noun_data.seek(synset.offset())
        fields = self._noun_data.readline().split("|")[0].split()
        # offset lex_filenum ss_type w_cnt(hex) (word lex_id)*w_cnt p_cnt (symbol offset pos source/target)*p_cnt
        i = 4 + 2 * int(fields[3], 16)
        for k in range(int(fields[i])):
            symbol, offset, pos = fields[i + 1 + 4 * k: i + 4 + 4 * k]
            if symbol in ("@", "@i"):
                return self.wn.synset_from_pos_and_offset(pos, int(offset))
        return None

    def _co_hyponyms(self, lemma: str) -> tuple[str, ...]:
        """Sorted single-word co-hyponyms of ``lemma``'s first ``noun_senses`` noun senses."""
        out: set[str] = set()
        for synset in self.wn.synsets(lemma, "n")[: self.noun_senses]:
            parent = self.first_hypernym(synset)
            if parent is None:
                continue
            ancestors = set(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())) | {synset}
            own = {name.lower() for name in synset.lemma_names()}
            for sibling in parent.hyponyms() + parent.instance_hyponyms():
                if sibling == synset:
                    continue
                for name in sibling.lemma_names():
                    if not _usable(name) or name == lemma or name in own:
                        continue
                    # A word with a sense at or above the original would leave the caption true.
                    if any(sense in ancestors for sense in self.wn.synsets(name, "n")):
                        continue
                    out.add(name)
        return tuple(sorted(out))

    def _antonyms(self, lemma: str) -> tuple[str, ...]:
        """Sorted single-word antonyms of ``lemma``'s first ``adj_senses`` adjective senses.

        Direct antonyms first; a satellite with none takes its head adjective's antonyms (WordNet's
        indirect antonymy through similar-to).
        """
        out: set[str] = set()
        for synset in self.wn.synsets(lemma, "a")[: self.adj_senses]:
            direct = {a.name() for lem in synset.lemmas() if lem.name().lower() == lemma for a in lem.antonyms()}
            if not direct and synset.pos() == "s":
                direct = {a.name() for head in synset.similar_tos() for lem in head.lemmas() for a in lem.antonyms()}
            out |= {name for name in direct if _usable(name) and name != lemma}
        return tuple(sorted(out))

    # ---- operators -----------------------------------------------------------------------------

    def replace_noun(self, parse: Parse, slot: int, rng: random.Random) -> list[Edit]:
        token = parse.tokens[slot]
        plural = self.forms.is_plural(token)
        words = list(self.co_hyponyms(token.lemma))
        rng.shuffle(words)
        edits = []
        for word in words:
            surface = self.forms.inflect(word, plural)
            if surface is None:
                continue
            surface = match_case(token.text, surface)
            edits.append(Edit("replace_noun", slot, token.text, surface, word, {slot: surface}))
        return edits

    def replace_att(self, parse: Parse, slot: int, rng: random.Random) -> list[Edit]:
        token = parse.tokens[slot]
        if token.lower != token.lemma and token.lower not in FAMILY_OF:
            return []  # comparatives and superlatives ("larger"): no inflection rules for adjectives
        words = family_alternatives(token.lower) or list(self.antonyms(token.lemma))
        rng.shuffle(words)
        return [Edit("replace_att", slot, token.text, match_case(token.text, w), w, {slot: match_case(token.text, w)})
                for w in words]

    def swap_noun(self, parse: Parse, slot: int, partners: list[int]) -> list[Edit]:
        """Swap the head noun at ``slot`` with the first usable head in ``partners`` (in order)."""
        a = parse.tokens[slot]
        if not a.head:
            return []
        edits = []
        for j in partners:
            b = parse.tokens[j]
            if j == slot or b.tag != "NOUN" or not b.head or b.chunk == a.chunk or b.lemma == a.lemma:
                continue
            new_a = self.forms.inflect(b.lemma, self.forms.is_plural(a))
            new_b = self.forms.inflect(a.lemma, self.forms.is_plural(b))
            if new_a is None or new_b is None:
                continue
            new_a, new_b = match_case(a.text, new_a), match_case(b.text, new_b)
            edits.append(Edit("swap_noun", slot, a.text, new_a, b.lemma, {slot: new_a, j: new_b}))
        return edits

    def swap_att(self, parse: Parse, slot: int, partners: list[int]) -> list[Edit]:
        """Swap the adjective at ``slot`` with the first same-family adjective of another phrase."""
        a = parse.tokens[slot]
        if a.chunk < 0:
            return []
        family, group = FAMILY_OF.get(a.lower, (None, None))
        edits = []
        for j in partners:
            b = parse.tokens[j]
            if j == slot or b.tag != "ADJ" or b.chunk < 0 or b.chunk == a.chunk or b.lower == a.lower:
                continue
            b_family, b_group = FAMILY_OF.get(b.lower, (None, None))
            # Same family, and for family words another value: "small"<->"little" would change nothing.
            if b_family != family or (family is not None and b_group == group):
                continue
            new_a, new_b = match_case(a.text, b.lower), match_case(b.text, a.lower)
            edits.append(Edit("swap_att", slot, a.text, new_a, b.lemma, {slot: new_a, j: new_b}))
        return edits
