"""``argent taxonomy``: derive hiershapes' WordNet taxonomy file from WordNet 3.0 through nltk.

The shipped file ``argent/resources/hiershapes_taxonomy.tsv`` is the output of this command with
its defaults; the generator reads that file, so generating data never needs nltk or WordNet.

Rows (tab-separated, header ``wnid parent synset name kind``):
- the shape classes (``kind=class``), leaves of the tree, and every ancestor up to ``root``
  (``kind=node``; the root has parent ``-``): the WordNet plane-figure subtree under shape.n.02;
- the colours (``kind=colour``, parent ``-``), WordNet colour synsets.
wnids are WordNet 3.0 noun offsets in ImageNet style (``n13862780``); ``name`` is the synset's first
lemma with spaces.

WordNet is a DAG (square is both a rectangle and a regular polygon). The tree keeps, for each class,
the shortest hypernym path to ``root`` that passes through no other class (so classes stay leaves),
ties broken by the path's synset names; classes are attached in sorted order and a node already
in the tree keeps its first parent. Usage:

    NLTK_DATA=/folder/holding/corpora argent taxonomy --out argent/resources/hiershapes_taxonomy.tsv
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.io import ArgentError
from argent.wordnet import load_wordnet

SHIPPED_TAXONOMY = Path(__file__).resolve().parents[2] / "resources" / "hiershapes_taxonomy.tsv"
DEFAULT_ROOT = "shape.n.02"
DEFAULT_CLASSES: tuple[str, ...] = (
    "square.n.01", "rectangle.n.01", "rhombus.n.01", "trapezoid.n.01", "triangle.n.01", "pentagon.n.03",
    "hexagon.n.01", "octagon.n.01", "circle.n.01", "semicircle.n.01", "star.n.05", "heart.n.07",
)
DEFAULT_COLOURS: tuple[str, ...] = (
    "red.n.01", "orange.n.02", "yellow.n.01", "green.n.01", "blue.n.01", "purple.n.01", "pink.n.01",
    "brown.n.01", "black.n.01",
)
HEADER = ("wnid", "parent", "synset", "name", "kind")
KINDS = ("root", "node", "class", "colour")
NO_PARENT = "-"


@dataclass(frozen=True)
class TaxonomyRow:
    wnid: str
    parent: str
    synset: str
    name: str
    kind: str


def wnid_of(synset: Any) -> str:
    """ImageNet-style id: part-of-speech letter + 8-digit offset (``n13878634``)."""
    return f"{synset.pos()}{synset.offset():08d}"


def name_of(synset: Any) -> str:
    return synset.lemma_names()[0].replace("_", " ").lower()


def _load_wordnet(nltk_data: str | None) -> Any:
    wordnet = load_wordnet(nltk_data or None)  # argent's one WordNet loader; its errors are argent's (exit 2)
    if wordnet.get_version() != "3.0":
        raise ArgentError(f"WordNet {wordnet.get_version()} found; hiershapes' wnids are WordNet 3.0 offsets")
    return wordnet


def _synset(wn: Any, name: str, what: str) -> Any:
    try:
        return wn.synset(name)
    except Exception as err:  # nltk raises ValueError / WordNetError for unknown names
        raise ArgentError(f"{what}: {name!r} is not a WordNet 3.0 synset ({err})") from None


def _class_path(synset: Any, root: Any, classes: set[Any]) -> list[Any]:
    """Shortest root→synset hypernym path avoiding the other classes; ties by synset names."""
    candidates = []
    for path in synset.hypernym_paths():  # each runs entity → ... → synset
        if root not in path:
            continue
        sub = path[path.index(root):]
        if any(s in classes for s in sub[:-1]):
            continue
        candidates.append(sub)
    if not candidates:
        raise ArgentError(f"{synset.name()}: no hypernym path to {root.name()} that avoids the other classes; "
                         "drop one of the nested classes")
    return min(candidates, key=lambda p: (len(p), [s.name() for s in p]))


def derive_rows(wn: Any, classes: Sequence[str], colours: Sequence[str], root: str = DEFAULT_ROOT) -> list[TaxonomyRow]:
    """The taxonomy rows for ``classes`` under ``root`` plus the ``colours`` (see module doc)."""
    root_syn = _synset(wn, root, "root")
    class_syns = {_synset(wn, c, "class") for c in classes}
    if len(class_syns) != len(classes):
        raise ArgentError(f"classes: duplicates in {list(classes)}")
    parent: dict[Any, Any | None] = {root_syn: None}
    for syn in sorted(class_syns, key=lambda s: s.name()):
        path = _class_path(syn, root_syn, class_syns)
        # Walk up from the class; stop at the first node already in the tree (it keeps its parent).
        for i in range(len(path) - 1, 0, -1):
            if path[i] in parent:
                break
            parent[path[i]] = path[i - 1]
    rows = []
    for syn in sorted(parent, key=lambda s: (_depth(s, parent), wnid_of(s))):
        kind = "root" if syn == root_syn else "class" if syn in class_syns else "node"
        up = parent[syn]
        rows.append(TaxonomyRow(wnid_of(syn), wnid_of(up) if up is not None else NO_PARENT, syn.name(), name_of(syn), kind))
    for name in colours:
        syn = _synset(wn, name, "colour")
        rows.append(TaxonomyRow(wnid_of(syn), NO_PARENT, syn.name(), name_of(syn), "colour"))
    return rows


def _depth(syn: Any, parent: dict[Any, Any | None]) -> int:
    depth = 0
    while parent[syn] is not None:
        syn, depth = parent[syn], depth + 1
    return depth


def format_rows(rows: Sequence[TaxonomyRow]) -> str:
    lines = [
        "# hiershapes taxonomy: WordNet 3.0 shape classes with their ancestors, and colours.",
        "# Regenerate with `argent taxonomy` (argent/data/hiershapes/wordnet_subtree.py).",
        "\t".join(HEADER),
    ]
    lines += ["\t".join((r.wnid, r.parent, r.synset, r.name, r.kind)) for r in rows]
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="argent taxonomy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=SHIPPED_TAXONOMY, help="output TSV (default: the shipped file)")
    parser.add_argument("--root", default=DEFAULT_ROOT, help="root synset (an ancestor of plane_figure.n.01)")
    parser.add_argument("--classes", nargs="+", default=list(DEFAULT_CLASSES), help="class synsets")
    parser.add_argument("--colours", nargs="+", default=list(DEFAULT_COLOURS), help="colour synsets")
    parser.add_argument("--nltk-data", default=os.environ.get("NLTK_DATA"), help="folder holding corpora/wordnet.zip")
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if --out differs from WordNet's")
    args = parser.parse_args(argv)
    wn = _load_wordnet(args.nltk_data)
    text = format_rows(derive_rows(wn, args.classes, args.colours, args.root))
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'DIFFERS from WordNet; rerun argent taxonomy'}")
        return 0 if same else 1
    write_atomic(args.out, text)
    print(f"wrote {args.out} ({text.count(chr(10)) - 3} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
