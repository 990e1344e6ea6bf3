"""Taxonomy reader and WordNet hierarchy metrics (docs/method.md §6.3)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from argent.data.taxonomy import Taxonomy, TaxonomyError, read_names
from argent.evaluation.hierarchy import hierarchy_metrics, pair_metrics
from tests.fixtures import SHARED

ISA = SHARED / "imagenet_wordnet" / "imagenet_isa.txt"
needs_isa = pytest.mark.skipif(not ISA.is_file(), reason=f"real ImageNet WordNet tree not found at {ISA}")

CHIHUAHUA, JAPANESE_SPANIEL, TABBY, TENCH = "n02085620", "n02085782", "n02123045", "n01440764"


@pytest.fixture(scope="module")
def imagenet() -> Taxonomy:
    return Taxonomy.from_edges_file(ISA)


# ------------------------------------------------------------------ real tree
@needs_isa
@pytest.mark.shared_data
def test_imagenet_tree_stats(imagenet: Taxonomy) -> None:
    assert len(imagenet) == 1372
    assert len(imagenet.leaves) == 1000
    assert imagenet.root == "n00001930"
    depths = [imagenet.depth(leaf) for leaf in imagenet.leaves]
    assert (min(depths), max(depths)) == (3, 15)
    assert abs(sum(depths) / len(depths) - 8.6) < 0.05
    wnids = (ISA.parent / "imagenet_wnids.txt").read_text().split()
    assert list(imagenet.leaves) == sorted(wnids)


@needs_isa
@pytest.mark.shared_data
def test_imagenet_known_pairs(imagenet: Taxonomy) -> None:
    siblings = pair_metrics(imagenet, CHIHUAHUA, JAPANESE_SPANIEL)  # both toy dogs (n02085374)
    assert siblings == {"tie": 2.0, "lca": 1.0, "jaccard": 1.0, "hier_precision": 1.0, "hier_recall": 1.0}
    correct = pair_metrics(imagenet, TABBY, TABBY)
    assert correct["tie"] == 0.0 and correct["lca"] == 1.0 and correct["jaccard"] == 1.0
    # Chihuahua vs tabby: both at depth 12, sharing the 9 ancestors down to carnivore (n02075296).
    cat = pair_metrics(imagenet, CHIHUAHUA, TABBY)
    assert cat == pytest.approx({"tie": 8.0, "lca": 4.0, "jaccard": 9 / 15, "hier_precision": 0.75, "hier_recall": 0.75})
    # Truth Chihuahua (depth 12), prediction tench (depth 10): 6 shared ancestors (to vertebrate).
    fish = pair_metrics(imagenet, CHIHUAHUA, TENCH)
    assert fish == pytest.approx({"tie": 12.0, "lca": 5.0, "jaccard": 6 / 16, "hier_precision": 0.6, "hier_recall": 0.5})


@needs_isa
@pytest.mark.shared_data
def test_hierarchy_metrics_match_independent_parent_walk(imagenet: Taxonomy) -> None:
    parent = {}
    for line in ISA.read_text().split("\n"):
        if line.strip():
            p, c = line.split()
            parent[c] = p

    def anc(n: str) -> list[str]:
        out = []
        while n in parent:
            n = parent[n]
            out.append(n)
        return out

    rng = random.Random(0)
    leaves = sorted(imagenet.leaves)
    truths = [rng.choice(leaves) for _ in range(300)]
    preds = [t if rng.random() < 0.3 else rng.choice(leaves) for t in truths]
    expect = {"tie": 0.0, "lca": 0.0, "jaccard": 0.0, "hier_precision": 0.0, "hier_recall": 0.0}
    for t, p in zip(truths, preds):
        at, ap = anc(t), anc(p)
        common = len(set(at) & set(ap))
        # Path length: steps up from each side to the first shared node.
        lca = next(n for n in [p] + ap if n in set([t] + at))
        up_p = ([p] + ap).index(lca)
        up_t = ([t] + at).index(lca)
        expect["tie"] += up_p + up_t
        expect["lca"] += len(ap) - common + 1
        expect["jaccard"] += common / len(set(at) | set(ap))
        expect["hier_precision"] += common / len(ap)
        expect["hier_recall"] += common / len(at)
    expect = {k: v / len(truths) for k, v in expect.items()}
    assert hierarchy_metrics(imagenet, truths, preds) == pytest.approx(expect)


# ------------------------------------------------------------------ small trees & errors
def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tax.txt"
    path.write_text(text)
    return path


def test_small_tree_queries(tmp_path: Path) -> None:
    tax = Taxonomy.from_edges_file(_write(tmp_path, "# comment\nr a\nr b\n\na a1\na a2\nb b1\n"))
    assert tax.root == "r"
    assert tax.leaves == ("a1", "a2", "b1")
    assert tax.children("a") == ("a1", "a2")
    assert tax.parent("a1") == "a" and tax.parent("r") is None
    assert tax.ancestors("a1") == ("r", "a")
    assert tax.ancestors("r") == ()
    assert tax.depth("b1") == 2
    assert tax.path_length("a1", "a2") == 2
    assert tax.path_length("a1", "b1") == 4
    assert tax.path_length("a", "a1") == 1
    assert Taxonomy.from_edges([("r", "a"), ("a", "b")]).leaves == ("b",)
    with pytest.raises(KeyError, match="zzz"):
        tax.ancestors("zzz")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("r a\nr a b\n", r"tax.txt:2: expected '<parent id> <child id>'"),
        ("r a\nr b\nb a\n", r"tax.txt:3: a has a second parent b"),
        ("r a\nr a\n", r"tax.txt:2: duplicate edge r -> a"),
        ("r a\ns b\n", r"2 roots \['r', 's'\]"),
        ("r a\nx y\ny z\nz x\n", r"on a cycle"),
        ("r a\na a\n", r"tax.txt:2: a is its own parent"),
        ("# only a comment\n", r"no edges"),
    ],
)
def test_bad_taxonomy_files(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(TaxonomyError, match=match):
        Taxonomy.from_edges_file(_write(tmp_path, text))


def test_missing_taxonomy_file(tmp_path: Path) -> None:
    with pytest.raises(TaxonomyError, match="not found"):
        Taxonomy.from_edges_file(tmp_path / "nope.txt")


def test_read_names(tmp_path: Path) -> None:
    path = tmp_path / "class_names.tsv"
    path.write_text("n1\tsquare\nn2\tfive-pointed star\n")
    assert read_names(path) == {"n1": "square", "n2": "five-pointed star"}
    path.write_text("n1\tsquare\nn2 no tab\n")
    with pytest.raises(TaxonomyError, match="class_names.tsv:2"):
        read_names(path)


def test_hierarchy_metrics_rejects_unknown_class(tmp_path: Path) -> None:
    tax = Taxonomy.from_edges([("r", "a"), ("r", "b")])
    with pytest.raises(KeyError, match="'c'"):
        hierarchy_metrics(tax, ["a"], ["c"])
