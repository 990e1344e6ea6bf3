"""A class taxonomy (e.g. the ImageNet WordNet tree) read from ``parent child`` id edges.

File format: one edge per line, ``<parent id> <child id>`` separated by whitespace; blank lines
and lines starting with ``#`` are ignored. The edges must form one tree: every node has at most
one parent, exactly one node (the root) has none, and every node is reachable from the root (no
cycles). Anything else raises ``TaxonomyError`` naming the file and line.

Ancestor sets follow the hierarchical metrics of HyCoCLIP (docs/method.md §6.3): ``ancestors(n)``
holds the root and excludes ``n`` itself, so ``depth(n) == len(ancestors(n))``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from argent.io import ArgentError

__all__ = ["Taxonomy", "TaxonomyError", "read_names"]


class TaxonomyError(ArgentError, ValueError):
    """The edge list is malformed or not a tree; the message names the file and line."""


class Taxonomy:
    """A rooted tree over string ids. Build it with ``from_edges_file`` or ``from_edges``."""

    def __init__(self, parent_of: dict[str, str], nodes: list[str], root: str) -> None:
        # Private: the classmethods validate before calling this.
        self._parent = parent_of
        self._nodes = nodes
        self.root = root
        children: dict[str, list[str]] = {n: [] for n in nodes}
        for child, parent in parent_of.items():
            children[parent].append(child)
        self._children = {n: tuple(sorted(c)) for n, c in children.items()}
        self.leaves: tuple[str, ...] = tuple(sorted(n for n in nodes if not children[n]))
        self.ancestors = lru_cache(maxsize=None)(self._ancestors)

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_edges_file(cls, path: str | Path) -> Taxonomy:
        path = Path(path)
        if not path.is_file():
            raise TaxonomyError(f"{path}: taxonomy file not found (expected 'parent child' id lines)")
        edges: list[tuple[str, str]] = []
        where: list[str] = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split()
            if len(parts) != 2:
                raise TaxonomyError(
                    f"{path}:{number}: expected '<parent id> <child id>', got {line!r}"
                )
            edges.append((parts[0], parts[1]))
            where.append(f"{path}:{number}")
        if not edges:
            raise TaxonomyError(f"{path}: no edges; a taxonomy needs 'parent child' id lines")
        return cls._build(edges, where, str(path))

    @classmethod
    def from_edges(cls, pairs: Iterable[tuple[str, str]]) -> Taxonomy:
        edges = [(str(p), str(c)) for p, c in pairs]
        if not edges:
            raise TaxonomyError("taxonomy: no edges")
        return cls._build(edges, [f"taxonomy edge {i}" for i in range(len(edges))], "taxonomy")

    @classmethod
    def _build(cls, edges: list[tuple[str, str]], where: list[str], source: str) -> Taxonomy:
        parent_of: dict[str, str] = {}
        first_seen: dict[str, str] = {}
        nodes: dict[str, None] = {}  # insertion-ordered set
        for (parent, child), loc in zip(edges, where):
            if parent == child:
                raise TaxonomyError(f"{loc}: {child} is its own parent (a cycle)")
            if child in parent_of:
                if parent_of[child] == parent:
                    raise TaxonomyError(f"{loc}: duplicate edge {parent} -> {child} (first at {first_seen[child]})")
                raise TaxonomyError(
                    f"{loc}: {child} has a second parent {parent} (first parent {parent_of[child]} at "
                    f"{first_seen[child]}); a taxonomy must be a tree"
                )
            parent_of[child] = parent
            first_seen[child] = loc
            nodes.setdefault(parent)
            nodes.setdefault(child)
        roots = [n for n in nodes if n not in parent_of]
        if len(roots) != 1:
            if not roots:
                raise TaxonomyError(f"{source}: no root (every node has a parent: a cycle)")
            raise TaxonomyError(
                f"{source}: {len(roots)} roots {sorted(roots)[:10]}; a taxonomy must have one root"
            )
        root = roots[0]
        # With one parent per node, a node not reachable from the root sits on a cycle.
        children: dict[str, list[str]] = {}
        for child, parent in parent_of.items():
            children.setdefault(parent, []).append(child)
        seen = {root}
        stack = [root]
        while stack:
            for child in children.get(stack.pop(), ()):
                seen.add(child)
                stack.append(child)
        unreached = [n for n in nodes if n not in seen]
        if unreached:
            node = unreached[0]
            raise TaxonomyError(
                f"{first_seen[node]}: {node} is on a cycle (not reachable from the root {root}); "
                f"{len(unreached)} node(s) affected"
            )
        return cls(parent_of, list(nodes), root)

    # ---------------------------------------------------------------- queries
    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._children

    def _check(self, node: str) -> None:
        if node not in self._children:
            raise KeyError(f"{node!r} is not a node of this taxonomy (root {self.root})")

    def parent(self, node: str) -> str | None:
        """The parent id, or None for the root."""
        self._check(node)
        return self._parent.get(node)

    def children(self, node: str) -> tuple[str, ...]:
        """Child ids, sorted."""
        self._check(node)
        return self._children[node]

    def _ancestors(self, node: str) -> tuple[str, ...]:
        """Ancestors from the root down to the parent: root included, ``node`` excluded."""
        self._check(node)
        chain = []
        current = self._parent.get(node)
        while current is not None:
            chain.append(current)
            current = self._parent.get(current)
        return tuple(reversed(chain))

    def depth(self, node: str) -> int:
        """Edges from the root (root 0); equals ``len(ancestors(node))``."""
        return len(self.ancestors(node))

    def lowest_common_ancestor(self, a: str, b: str) -> str:
        """The deepest node that is ``a`` or an ancestor of ``a`` and also of ``b``."""
        path_b = set(self.ancestors(b)) | {b}
        for node in reversed(self.ancestors(a) + (a,)):
            if node in path_b:
                return node
        raise AssertionError("a tree always has a common ancestor")  # pragma: no cover

    def path_length(self, a: str, b: str) -> int:
        """Number of edges on the undirected tree path between ``a`` and ``b`` (0 if equal)."""
        lca = self.lowest_common_ancestor(a, b)
        return self.depth(a) + self.depth(b) - 2 * self.depth(lca)


def read_names(path: str | Path) -> dict[str, str]:
    """``<id>\\t<name>`` lines (e.g. ``class_names.tsv``) -> {id: name}.

    Errors name the file and line: a line without a tab, an empty id or name, a repeated id.
    """
    path = Path(path)
    if not path.is_file():
        raise TaxonomyError(f"{path}: names file not found (expected '<id>\\t<name>' lines)")
    names: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                raise TaxonomyError(f"{path}:{number}: expected '<id>\\t<name>', got {row!r}")
            key = row[0].strip()
            if key in names:
                raise TaxonomyError(f"{path}:{number}: id {key} appears twice")
            names[key] = row[1].strip()
    if not names:
        raise TaxonomyError(f"{path}: no '<id>\\t<name>' lines")
    return names
