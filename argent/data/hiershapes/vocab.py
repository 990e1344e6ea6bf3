"""hiershapes vocabulary: the WordNet taxonomy file (classes, their ancestors, colours), read without nltk.

``Vocabulary.load(path)`` reads the TSV written by ``argent taxonomy`` (default: the shipped
``argent/resources/hiershapes_taxonomy.tsv``) and ``select(classes, colours)`` narrows it to the
generator's configured vocabularies. ``edges()`` gives the ``parent child`` wnid pairs of the class
tree (root → ... → classes), ``path(class)`` the root-to-class chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from argent.data.hiershapes.wordnet_subtree import HEADER, KINDS, NO_PARENT, SHIPPED_TAXONOMY
from argent.io import ArgentError


class VocabularyError(ArgentError, ValueError):
    """The taxonomy file or a configured vocabulary is wrong; the message says where."""


@dataclass(frozen=True)
class Concept:
    wnid: str
    parent: str
    synset: str
    name: str
    kind: str


@dataclass(frozen=True)
class Vocabulary:
    """Classes (leaves), their ancestors, and colours; all keyed by synset name."""

    concepts: tuple[Concept, ...]
    source: str  # file path, for messages
    digest: str  # sha256 of the file, recorded in manifests

    # -- reading --------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path | None = None) -> Vocabulary:
        path = Path(path) if path else SHIPPED_TAXONOMY
        if not path.is_file():
            raise VocabularyError(f"{path}: taxonomy file not found (regenerate it with `argent taxonomy --out {path}`)")
        raw = path.read_bytes()
        concepts = []
        header_seen = False
        for row, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if not header_seen:
                if tuple(fields) != HEADER:
                    raise VocabularyError(f"{path}: row {row}: header must be {HEADER}, got {fields}")
                header_seen = True
                continue
            if len(fields) != len(HEADER) or fields[4] not in KINDS:
                raise VocabularyError(f"{path}: row {row}: expected {len(HEADER)} fields {HEADER} with kind in {KINDS}")
            concepts.append(Concept(*fields))
        vocab = cls(tuple(concepts), str(path), hashlib.sha256(raw).hexdigest())
        vocab._validate()
        return vocab

    def _validate(self) -> None:
        by_wnid = {c.wnid: c for c in self.concepts}
        roots = [c for c in self.concepts if c.kind == "root"]
        if len(roots) != 1:
            raise VocabularyError(f"{self.source}: expected exactly one root row, found {len(roots)}")
        for c in self.concepts:
            if c.kind in ("node", "class") and c.parent not in by_wnid:
                raise VocabularyError(f"{self.source}: {c.synset} has parent {c.parent} which is not in the file")
            if c.kind == "node" and not any(d.parent == c.wnid for d in self.concepts):
                raise VocabularyError(f"{self.source}: node {c.synset} has no child")
            if c.kind == "class" and any(d.parent == c.wnid for d in self.concepts):
                raise VocabularyError(f"{self.source}: class {c.synset} has children; classes must be leaves")

    # -- views ----------------------------------------------------------------------------
    def _of_kind(self, kind: str) -> list[Concept]:
        return [c for c in self.concepts if c.kind == kind]

    @property
    def classes(self) -> list[Concept]:
        return self._of_kind("class")

    @property
    def colours(self) -> list[Concept]:
        return self._of_kind("colour")

    @property
    def root(self) -> Concept:
        return self._of_kind("root")[0]

    def concept(self, synset: str) -> Concept:
        for c in self.concepts:
            if c.synset == synset:
                return c
        raise VocabularyError(f"{synset!r} is not in {self.source}")

    def by_wnid(self, wnid: str) -> Concept:
        for c in self.concepts:
            if c.wnid == wnid:
                return c
        raise VocabularyError(f"{wnid!r} is not in {self.source}")

    def path(self, synset: str) -> list[Concept]:
        """Root → ... → the class, inclusive."""
        node = self.concept(synset)
        chain = [node]
        while node.parent != NO_PARENT:
            node = self.by_wnid(node.parent)
            chain.append(node)
        return chain[::-1]

    def select(self, classes: Sequence[str] | None = None, colours: Sequence[str] | None = None) -> Vocabulary:
        """The sub-vocabulary of the given class and colour synsets (all when None); ancestors kept."""
        class_set = set(classes) if classes is not None else {c.synset for c in self.classes}
        colour_set = set(colours) if colours is not None else {c.synset for c in self.colours}
        known_classes = {c.synset for c in self.classes}
        known_colours = {c.synset for c in self.colours}
        unknown = sorted(class_set - known_classes) + sorted(colour_set - known_colours)
        if unknown:
            raise VocabularyError(
                f"{unknown} not in {self.source} (classes: {sorted(known_classes)}; colours: {sorted(known_colours)}); "
                "regenerate the taxonomy with `argent taxonomy --classes ... --colours ...`"
            )
        if len(class_set) < 2 or not colour_set:
            raise VocabularyError("hiershapes needs at least 2 classes and 1 colour")
        keep = {c.synset for c in self.concepts if c.kind == "colour" and c.synset in colour_set}
        for name in class_set:
            keep.update(c.synset for c in self.path(name))
        return Vocabulary(tuple(c for c in self.concepts if c.synset in keep), self.source, self.digest)

    def edges(self) -> list[tuple[str, str]]:
        """``(parent wnid, child wnid)`` of the class tree, in file order."""
        return [(c.parent, c.wnid) for c in self.concepts if c.kind in ("node", "class")]
