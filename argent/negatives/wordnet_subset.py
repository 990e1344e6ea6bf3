"""The WordNet 3.0 subset argent ships for the embedded benchmark's hard negatives
(``argent/resources/wordnet-3.0-subset.zip``, written by ``scripts/wordnet_subset.py``).

The miner (``tagger.py``, ``operators.py``) asks WordNet about the words of a caption; for a known
caption vocabulary the entries it can reach are few (the hiershapes vocabulary: a few hundred synsets of
WordNet's 117,659), so argent ships those, in NLTK's ``wordnet.zip`` layout, instead of the 10.8 MB
database. For each word ``w`` of the vocabulary the subset keeps:

- the index entries of every form NLTK's morphology tries for ``w`` in each part of speech (its
  exception lists, then its suffix rules, applied until they stop): ``morphy`` answers as on the full
  database, a miss included;
- every index entry of those forms brings all its synsets; each synset kept brings the index entry of
  its first lemma (NLTK names a synset by that lemma's sense number; the lemma's other synsets are not
  kept: the miner never asks for them) and, for a satellite adjective, its head synset (NLTK spells a
  satellite's sense keys with its head's);
- for a noun: each sense's hypernym closure, every hypernym's hyponyms and their lemma names (the
  co-hyponyms ``replace_noun`` offers) with the plural forms of those names and of ``w``;
- for an adjective: its lemmas' antonyms, and for a satellite its head's (``replace_att``);
- the SemCor counts (``cntlist.rev``) and ``index.sense`` lines of every kept lemma; the exception
  lists and ``lexnames`` whole; WordNet's LICENSE.

Data files keep their length: a line left out is overwritten with spaces (NLTK skips a line that
starts with one), so every synset sits at its WordNet 3.0 byte offset: the offsets that name synsets
(``n13873502``) and that the pointers hold are WordNet 3.0's. ``argent-subset.json`` in the zip lists
the words covered; the miner refuses a caption with another word (``argent.wordnet.subset_words``).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable
from typing import Any

from argent.negatives.operators import Operators, regular_plural
from argent.negatives.tagger import LexiconTagger
from argent.wordnet import SUBSET_FILE

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
COPIED_WHOLE = ("lexnames", "LICENSE", "citation.bib", *(f"{name}.exc" for name in POS_FILES.values()))
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed: the same subset is the same zip, byte for byte


def morphy_forms(word: str, pos: str, exceptions: dict[str, dict[str, list[str]]], rules: dict[str, Any]) -> set[str]:
    """Every form NLTK's morphology may test for ``word`` as ``pos``: the word, its exception-list bases,
    and the suffix rules applied until they stop (a superset of what any NLTK version tries)."""
    forms = {word, *exceptions[pos].get(word, ())}
    frontier = [word]
    while frontier:
        produced = [f[: -len(old)] + new for f in frontier for old, new in rules[pos] if f.endswith(old)]
        frontier = [f for f in produced if f not in forms]
        forms.update(frontier)
    return forms


def plural_forms(lemma: str, irregular: dict[str, list[str]]) -> set[str]:
    """The plurals ``operators.WordForms.pluralize`` may write: any irregular one, else its spelling rules."""
    return {regular_plural(lemma), *irregular.get(lemma, ())}


class SubsetBuilder:
    """Collects the index entries and synsets a caption vocabulary reaches in a full WordNet reader ``wn``,
    for a miner that reads ``noun_senses`` noun and ``adj_senses`` adjective senses (MiningConfig)."""

    def __init__(self, wn: Any, noun_senses: int = 1, adj_senses: int = 1):
        self.wn = wn
        self.noun_senses, self.adj_senses = noun_senses, adj_senses
        self.first_hypernym = Operators(wn).first_hypernym  # the miner's own reading of pointer order
        self.entries: set[tuple[str, str]] = set()  # (lemma, pos): index lines kept with all their synsets
        self.named: set[tuple[str, str]] = set()    # index lines kept to name a kept synset
        self.synsets: set[Any] = set()
        self.exceptions = {pos: self._exceptions(name) for pos, name in POS_FILES.items()}
        self.irregular_plurals: dict[str, list[str]] = {}
        for inflected, bases in self.exceptions["n"].items():
            for base in bases:
                self.irregular_plurals.setdefault(base, []).append(inflected)

    def _exceptions(self, name: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self.wn.open(f"{name}.exc") as fh:
            for line in fh:
                terms = line.split()
                if terms:
                    out[terms[0]] = terms[1:]
        return out

    def add_entry(self, name: str, pos: str) -> None:
        """The index entry of ``name`` as ``pos`` and all its synsets (``synsets(name, pos)`` as on the full database)."""
        key = (name.lower(), pos)
        if key in self.entries:
            return
        self.entries.add(key)
        for synset in self.wn.synsets(name, pos):
            self.add_synset(synset)

    def add_synset(self, synset: Any) -> None:
        """``synset``'s data line, the index entry of its first lemma (not that lemma's other synsets: the
        miner never asks for them) and, for a satellite, its head."""
        if synset in self.synsets:
            return
        self.synsets.add(synset)
        self.named.add((synset.lemma_names()[0].lower(), "a" if synset.pos() == "s" else synset.pos()))
        if synset.pos() == "s":
            for head in synset.similar_tos():
                self.add_synset(head)

    def add_form(self, word: str, pos: str) -> list[str]:
        """Every index entry morphology may find for ``word`` as ``pos``; returns those forms."""
        found = sorted(f for f in morphy_forms(word, pos, self.exceptions, self.wn.MORPHOLOGICAL_SUBSTITUTIONS)
                       if self.wn.synsets(f, pos))
        for form in found:
            self.add_entry(form, pos)
        return found

    def add_word(self, word: str) -> None:
        """What the tagger (``info``: morphology and sense counts in four parts of speech) and the
        operators read about a caption word ``word``; a closed-class word never reaches WordNet."""
        if LexiconTagger._closed_tag(word) is not None:
            return
        for pos in POS_FILES:
            for base in self.add_form(word, pos):
                if pos == "n":
                    self._noun(base)
                elif pos == "a":
                    self._adjective(base)

    def _plurals(self, lemma: str) -> None:
        for plural in plural_forms(lemma, self.irregular_plurals):
            self.add_form(plural, "n")

    def _noun(self, base: str) -> None:
        """``replace_noun`` and ``swap_noun``: the plural, and the co-hyponyms of the first senses."""
        self._plurals(base)
        for synset in self.wn.synsets(base, "n")[: self.noun_senses]:
            for ancestor in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()):
                self.add_synset(ancestor)
            parent = self.first_hypernym(synset)
            if parent is None:
                continue
            for sibling in parent.hyponyms() + parent.instance_hyponyms():
                self.add_synset(sibling)
                for name in sibling.lemma_names():
                    self.add_entry(name, "n")  # the miner asks whether a sense of it is an ancestor
                    self._plurals(name.lower())

    def _adjective(self, base: str) -> None:
        """``replace_att``: antonyms, direct or through a satellite's head."""
        for synset in self.wn.synsets(base, "a")[: self.adj_senses]:
            heads = synset.similar_tos() if synset.pos() == "s" else []
            for source in (synset, *heads):
                for lemma in source.lemmas():
                    for antonym in lemma.antonyms():
                        self.add_synset(antonym.synset())

    def index_lines(self, pos: str) -> set[str]:
        return {name for name, p in self.entries | self.named if p == pos}

    def sense_keys(self) -> set[str]:
        return {lemma.key() for synset in self.synsets for lemma in synset.lemmas()}


def _data_file(raw: bytes, offsets: set[int]) -> bytes:
    """``raw`` (a data.<pos> file) with every synset line not in ``offsets`` overwritten by spaces, same length."""
    out = bytearray()
    for line in raw.splitlines(keepends=True):
        keep = line[:1] == b" " or int(line[:8]) in offsets
        out += line if keep else b" " * (len(line) - 1) + b"\n"
    return bytes(out)


def _kept_lines(raw: bytes, keep: Any) -> bytes:
    """The header lines (they start with a space) and every line whose first field passes ``keep``."""
    return b"".join(line for line in raw.splitlines(keepends=True)
                    if line[:1] == b" " or keep(line.split(b" ", 1)[0].decode()))


def subset_members(source: zipfile.ZipFile, builder: SubsetBuilder, words: Iterable[str]) -> dict[str, bytes]:
    """The members of the subset zip (``wordnet/<file>``) from the full WordNet zip ``source``."""
    words = sorted(set(words))
    offsets: dict[str, set[int]] = {name: set() for name in POS_FILES.values()}
    for synset in builder.synsets:
        offsets[POS_FILES["a" if synset.pos() == "s" else synset.pos()]].add(synset.offset())
    keys = builder.sense_keys()
    members: dict[str, bytes] = {}
    for pos, name in POS_FILES.items():
        members[f"data.{name}"] = _data_file(source.read(f"wordnet/data.{name}"), offsets[name])
        members[f"index.{name}"] = _kept_lines(source.read(f"wordnet/index.{name}"), builder.index_lines(pos).__contains__)
    members["index.sense"] = _kept_lines(source.read("wordnet/index.sense"), keys.__contains__)
    members["cntlist.rev"] = _kept_lines(source.read("wordnet/cntlist.rev"), keys.__contains__)
    for name in COPIED_WHOLE:
        members[name] = source.read(f"wordnet/{name}")
    members[SUBSET_FILE] = (json.dumps({
        "what": "the part of WordNet 3.0 argent's hard-negative miner reads for these caption words; the "
                "rest of each data file is spaces, so every synset keeps its WordNet 3.0 offset",
        "generated_by": "scripts/wordnet_subset.py (argent/negatives/wordnet_subset.py)",
        "licence": "WordNet 3.0 licence (LICENSE in this folder)",
        "noun_senses": builder.noun_senses, "adj_senses": builder.adj_senses,
        "synsets": len(builder.synsets), "index_entries": len(builder.entries | builder.named), "words": words,
    }, indent=1) + "\n").encode()
    return {f"wordnet/{name}": data for name, data in sorted(members.items())}


def zip_bytes(members: dict[str, bytes]) -> bytes:
    """A deterministic zip of ``members`` (fixed dates and modes, sorted, deflated), NLTK's layout."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        folder = zipfile.ZipInfo("wordnet/", ZIP_DATE)
        folder.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(folder, b"")
        for name, data in sorted(members.items()):
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.create_system = 3
            zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()


def zip_members(data: bytes) -> dict[str, bytes]:
    """The files of a zip (folders left out): what ``--check`` compares, whatever the compressor."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist() if not name.endswith("/")}
