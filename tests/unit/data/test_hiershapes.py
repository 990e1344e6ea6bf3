"""hiershapes round trips: generate a small set, read every split back through the real readers, and
check counts, levels, boxes, phrases and compositional negatives against the scene graphs.
Also: determinism (same seed, same hash) and the shipped WordNet taxonomy; the generator's options and
its command line: test_hiershapes_options.py."""

from __future__ import annotations

import csv
import json
import re
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argent.data.formats.coco_karpathy import read_karpathy
from argent.data.formats.grounded import read_grounded
from argent.data.formats.hierarcaps import read_hierarcaps
from argent.data.formats.imagefolder import read_image_folder
from argent.data.formats.sugarcrepe import CATEGORIES, read_sugarcrepe
from argent.data.hiershapes import cli, wordnet_subtree
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.policy import BadDataPolicy
from argent.io import ArgentError
from tests.fixtures import HS_SMALL as SMALL

SIZES, FILLS = ("small", "medium", "large"), ("solid", "striped", "outlined")


@pytest.fixture(scope="module")
def hs(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    manifest = generate(HiershapesParams(seed=3, **SMALL), out, jobs=1)
    return out, manifest


def shipped_rows() -> list[dict[str, str]]:
    lines = [ln for ln in wordnet_subtree.SHIPPED_TAXONOMY.read_text().splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def expected_phrase(obj: dict) -> str:
    words = f"{obj['size']} {obj['fill']} {obj['colour_name']} {obj['name']}"
    return ("an " if words[0] in "aeiou" else "a ") + words


# ------------------------------------------------------------------------------------------------
# Grounded shards
# ------------------------------------------------------------------------------------------------


def test_manifest_counts(hs):
    out, manifest = hs
    counts = manifest["counts"]
    assert counts["train"] == 40 and counts["val"] == 12 and counts["test"] == 30
    assert counts["train_shards"] == 3 and counts["val_shards"] == 1
    assert counts["classification"] == 2 * len(wordnet_subtree.DEFAULT_CLASSES)
    assert sorted(p.name for p in (out / "train").iterdir()) == [f"shard-{i:06d}.tar" for i in range(3)]
    assert manifest["min_box_area"] == round(1024 * (64 / 224) ** 2)
    assert set(counts["sugarcrepe"]) == set(CATEGORIES)


@pytest.mark.parametrize("split,n", [("train", 40), ("val", 12)])
def test_grounded_round_trip(hs, split, n):
    out, manifest = hs
    policy = BadDataPolicy("strict")
    samples = read_grounded(str(out / split / "*.tar"), min_box_area=manifest["min_box_area"], policy=policy)
    assert [s.key for s in samples] == [f"{split}-{i:08d}" for i in range(n)]
    assert policy.counts == {} and policy.dropped == {}
    n_objects = Counter()
    with_regions = {s.key: s for s in samples}
    for shard in sorted((out / split).glob("*.tar")):
        with tarfile.open(shard) as tar:
            metas = {Path(m.name).stem: json.load(tar.extractfile(m)) for m in tar.getmembers() if m.name.endswith(".json")}
        for key, meta in metas.items():
            sample, scene = with_regions[key], meta["scene"]
            objects = scene["objects"]
            n_objects[len(objects)] += 1
            assert sample.caption == scene["levels"][3]
            assert scene["levels"][0] == "a shape"
            # One region per object, in order, with the generator's box and phrase; then the
            # "<obj 0> <rel> <obj 1>" referring expression with the union box.
            phrases = [expected_phrase(o) for o in objects]
            assert [r.phrase for r in sample.regions[: len(objects)]] == phrases
            assert [r.box for r in sample.regions[: len(objects)]] == [tuple(o["box"]) for o in objects]
            if len(objects) > 1:
                rel = scene["relations"][0][1]
                assert sample.regions[-1].phrase == f"{phrases[0]} {rel} {phrases[1]}"
                b0, b1 = objects[0]["box"], objects[1]["box"]
                assert sample.regions[-1].box == (min(b0[0], b1[0]), min(b0[1], b1[1]), max(b0[2], b1[2]), max(b0[3], b1[3]))
            assert len(sample.regions) == len(objects) + (len(objects) > 1)
            # The caption states each relation; check it against the box centres.
            for _, rel, i in scene["relations"]:
                assert holds(rel, objects[0]["box"], objects[i]["box"])
            # The drawn pixels agree with the box: a solid object's centre has its colour.
            image = np.asarray(sample.image, dtype=float)
            for obj in objects:
                x0, y0, x1, y1 = obj["box"]
                assert x1 - x0 >= 1 and (x1 - x0) * (y1 - y0) > manifest["min_box_area"]
                if obj["fill"] == "solid":
                    centre = image[(y0 + y1) // 2, (x0 + x1) // 2]
                    assert np.abs(centre - np.array(obj["rgb"])).max() < 40, (key, obj)
    assert 1 <= min(n_objects) and max(n_objects) <= 3


def holds(rel: str, a: list[int], b: list[int]) -> bool:
    """Does 'a <rel> b' hold for pixel boxes (centres; image y grows downwards)?"""
    ax, ay, bx, by = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2, (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return {"left of": ax < bx, "right of": ax > bx, "above": ay < by, "below": ay > by}[rel]


# ------------------------------------------------------------------------------------------------
# Classification split and taxonomy
# ------------------------------------------------------------------------------------------------


def test_classification_round_trip(hs):
    out, _ = hs
    data = read_image_folder(out / "classification", BadDataPolicy("strict"))
    rows = {r["wnid"]: r for r in shipped_rows()}
    classes = sorted(r["wnid"] for r in rows.values() if r["kind"] == "class")
    assert data.class_ids == classes
    assert data.class_names == [rows[w]["name"] for w in classes]
    assert Counter(data.targets) == {i: 2 for i in range(len(classes))}
    scenes = [json.loads(line) for line in (out / "scenes" / "classification.jsonl").read_text().splitlines()]
    by_path = {s["path"]: s["scene"] for s in scenes}
    for path, label in data.samples:
        (obj,) = by_path[f"classification/{path.parent.name}/{path.name}"]["objects"]
        assert obj["wnid"] == data.class_ids[label]
        assert Image.open(path).size == (64, 64)
    # taxonomy.txt: a tree rooted at shape.n.02 whose leaves are exactly the classes.
    edges = [tuple(line.split()) for line in (out / "classification" / "taxonomy.txt").read_text().splitlines()]
    parents = {child: parent for parent, child in edges}
    assert len(parents) == len(edges)  # every node has one parent
    nodes = set(parents) | set(parents.values())
    roots = nodes - set(parents)
    assert roots == {"n00027807"}
    leaves = nodes - set(parents.values())
    assert leaves == set(classes)


def test_shipped_taxonomy_is_wordnet_shaped():
    rows = shipped_rows()
    assert all(re.fullmatch(r"n\d{8}", r["wnid"]) for r in rows)
    by_synset = {r["synset"]: r for r in rows}
    assert set(wordnet_subtree.DEFAULT_CLASSES) <= set(by_synset) and set(wordnet_subtree.DEFAULT_COLOURS) <= set(by_synset)
    # Known WordNet 3.0 offsets (from the WordNet database): plane figure, figure, square.
    assert by_synset["plane_figure.n.01"]["wnid"] == "n13863186"
    assert by_synset["figure.n.06"]["wnid"] == "n13862780"
    assert by_synset["square.n.01"]["wnid"] == "n13878634"
    for synset in wordnet_subtree.DEFAULT_CLASSES:  # every class descends from plane_figure
        node, chain = by_synset[synset], []
        while node["parent"] != "-":
            node = next(r for r in rows if r["wnid"] == node["parent"])
            chain.append(node["synset"])
        assert "plane_figure.n.01" in chain and chain[-1] == "shape.n.02"


def test_taxonomy_command_regenerates_the_shipped_file(tmp_path, nltk_data):
    out = tmp_path / "taxonomy.tsv"
    assert wordnet_subtree.main(["--out", str(out), "--nltk-data", str(nltk_data)]) == 0
    assert out.read_text() == wordnet_subtree.SHIPPED_TAXONOMY.read_text()
    assert wordnet_subtree.main(["--out", str(wordnet_subtree.SHIPPED_TAXONOMY), "--nltk-data", str(nltk_data), "--check"]) == 0
    # The tree rule: a class nested under another class takes another path (square avoids
    # rectangle, via regular_polygon); a class under a class with no other path is refused.
    with pytest.raises(ArgentError, match="circle"):  # an expected failure: one message, exit 2 through the CLI
        wordnet_subtree.main(["--out", str(out), "--nltk-data", str(nltk_data),
                       "--classes", "circle.n.01", "ellipse.n.01"])


# ------------------------------------------------------------------------------------------------
# Test pool: retrieval, HierarCaps, SugarCrepe
# ------------------------------------------------------------------------------------------------


def load_pool(out: Path) -> dict[int, dict]:
    return {s["image_id"]: s for s in map(json.loads, (out / "scenes" / "test.jsonl").read_text().splitlines())}


def test_retrieval_round_trip(hs):
    out, _ = hs
    pool = load_pool(out)
    rs = read_karpathy(out / "retrieval" / "dataset_hiershapes.json", out / "retrieval" / "images", policy=BadDataPolicy("strict"))
    assert len(rs.image_paths) == 30
    assert len(set(rs.captions)) == len(rs.captions)  # no caption names two images
    for i, path in enumerate(rs.image_paths):
        scene = pool[int(path.stem)]["scene"]
        captions = [rs.captions[j] for j in rs.captions_of(i)]
        assert len(captions) == len(scene["objects"])
        assert captions[0] == scene["levels"][3]
        for k, caption in enumerate(captions):  # caption k starts from object k
            assert caption.startswith(expected_phrase(scene["objects"][k]))


def test_hierarcaps_round_trip(hs):
    out, _ = hs
    pool = load_pool(out)
    with open(out / "hierarcaps" / "hierarcaps_test.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 30 and list(rows[0]) == ["id", "captions", "image_url"]
    for row in rows:
        image_id = int(re.search(r"(\d+)\.jpg$", row["image_url"]).group(1))
        assert (out / "hierarcaps" / "images" / f"COCO_val2014_{image_id:012d}.jpg").is_file()
        levels = row["captions"].split(" => ")
        scene = pool[image_id]["scene"]
        anchor = scene["objects"][0]
        assert levels == scene["levels"]
        assert levels[0] == "a shape"
        assert levels[2] == f"{'an' if anchor['colour_name'][0] in 'aeiou' else 'a'} {anchor['colour_name']} {anchor['name']}"
        assert levels[3].startswith(expected_phrase(anchor))
        assert len(set(levels)) == 4
    # The cleaning helper's reader reads it too (real HierarCaps layout).
    read = read_hierarcaps(out / "hierarcaps" / "hierarcaps_test.csv", out / "hierarcaps" / "images",
                                      BadDataPolicy("strict"))
    assert [s.levels for s in read] == [tuple(r["captions"].split(" => ")) for r in rows]


def test_val_per_class_sizes_the_validation_folder_alone(tmp_path, capsys):
    """classification_val/ has its own size (the study's zero-shot term), so the test folder can grow
    without it: pinned, it is the folder a smaller per_class made, byte for byte."""
    base = dict(train_scenes=0, val_scenes=0, test_scenes=0, pep_val_scenes=0)
    grown = generate(HiershapesParams(seed=3, per_class=3, val_per_class=1, **base), tmp_path / "grown", jobs=1)
    small = generate(HiershapesParams(seed=3, per_class=1, **base), tmp_path / "small", jobs=1)
    n = len(wordnet_subtree.DEFAULT_CLASSES)
    assert (grown["counts"]["classification"], grown["counts"]["classification_val"]) == (3 * n, n)
    assert (small["counts"]["classification"], small["counts"]["classification_val"]) == (n, n)  # None: per_class
    files = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}  # noqa: E731
    assert files(tmp_path / "grown" / "classification_val") == files(tmp_path / "small" / "classification_val")
    assert (tmp_path / "grown" / "scenes" / "classification_val.jsonl").read_bytes() == \
        (tmp_path / "small" / "scenes" / "classification_val.jsonl").read_bytes()
    none = generate(HiershapesParams(seed=3, per_class=1, val_per_class=0, **base), tmp_path / "none", jobs=1)
    assert none["counts"]["classification_val"] == 0 and not (tmp_path / "none" / "classification_val").exists()
    with pytest.raises(ValueError, match="val_per_class: must be >= 0"):
        HiershapesParams(val_per_class=-1).check()
    argv = ["--out", str(tmp_path / "cli"), "--per-class", "2", "--val-per-class", "1", "--jobs", "1",
            "--train-scenes", "0", "--val-scenes", "0", "--test-scenes", "0"]
    assert cli.main(argv) == 0
    assert json.loads((tmp_path / "cli" / "manifest.json").read_text())["counts"]["classification_val"] == n


def test_a_larger_test_pool_starts_with_the_smaller_one(hs, tmp_path):
    """Scene i of the pool depends only on the scenes before it: 10× test_scenes keeps the first
    design's scenes as its first rows (the default's hs_analysis reads those, limit: 500)."""
    out, _ = hs
    generate(HiershapesParams(seed=3, **dict(SMALL, test_scenes=20)), tmp_path / "hs20", jobs=1)
    big = (out / "hierarcaps" / "hierarcaps_test.csv").read_text().splitlines()
    small = (tmp_path / "hs20" / "hierarcaps" / "hierarcaps_test.csv").read_text().splitlines()
    assert len(big) == 31 and small == big[:21]
    for path in (tmp_path / "hs20" / "retrieval" / "images").iterdir():
        assert path.read_bytes() == (out / "retrieval" / "images" / path.name).read_bytes()


def test_pep_val_split_has_the_test_layout_and_no_test_caption(hs):
    out, manifest = hs
    assert manifest["counts"]["pep_val"] == 10
    val_csv, test_csv = out / "hierarcaps_val" / "hierarcaps_test.csv", out / "hierarcaps" / "hierarcaps_test.csv"
    with open(val_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 10 and list(rows[0]) == ["id", "captions", "image_url"]
    read = read_hierarcaps(val_csv, out / "hierarcaps_val" / "images", BadDataPolicy("strict"))
    assert len(read) == 10 and all(len(s.levels) == 4 for s in read)
    test_levels = {s.levels[3] for s in read_hierarcaps(test_csv, out / "hierarcaps" / "images", BadDataPolicy("strict"))}
    assert not test_levels & {s.levels[3] for s in read}


MENTION = re.compile(r"^an? (?:(small|medium|large) )?(?:(solid|striped|outlined) )?(\S+) (\S+)$")
REL = re.compile(r"^(left of|right of|above|below) (.*)$")


def caption_is_true(caption: str, objects: list[dict]) -> bool:
    """Evaluate a compositional caption on a scene, independently of the generator's code.

    Grammar: "M0 [rel M1] [and rel Mi]* [and M]" where M = "a [size] [fill] colour class";
    every M must describe an object of the scene, and "M0 rel Mi" must hold for the boxes.
    """
    def find(mention: str) -> dict | None:
        m = MENTION.match(mention)
        assert m, mention
        size, fill, colour, name = m.groups()
        hits = [o for o in objects if o["colour_name"] == colour and o["name"] == name
                and size in (None, o["size"]) and fill in (None, o["fill"])]
        return hits[0] if hits else None

    parts = caption.split(" and ")
    first = parts[0]
    rel_match = re.match(r"^(.*?) (left of|right of|above|below) (.*)$", first)
    anchor_text, clauses = (rel_match.group(1), [f"{rel_match.group(2)} {rel_match.group(3)}"]) if rel_match else (first, [])
    clauses += parts[1:]
    anchor = find(anchor_text)
    if anchor is None:
        return False
    for clause in clauses:
        rel = REL.match(clause)
        other = find(rel.group(2) if rel else clause)
        if other is None or (rel and not holds(rel.group(1), anchor["box"], other["box"])):
            return False
    return True


def test_sugarcrepe_round_trip_negatives_are_false(hs):
    out, manifest = hs
    pool = load_pool(out)
    items = read_sugarcrepe(out / "sugarcrepe", out / "sugarcrepe" / "images", BadDataPolicy("strict"))
    assert sorted(p.stem for p in (out / "sugarcrepe").glob("*.json")) == sorted(CATEGORIES)
    assert Counter(i.category for i in items) == {c: n for c, n in manifest["counts"]["sugarcrepe"].items() if n}
    for category in ("add_att", "add_obj", "replace_att", "replace_obj"):
        assert manifest["counts"]["sugarcrepe"][category] == 30  # every scene supports these
    for item in items:
        objects = pool[int(item.image_path.stem)]["scene"]["objects"]
        assert caption_is_true(item.caption, objects), item
        assert not caption_is_true(item.negative_caption, objects), item
        assert item.caption != item.negative_caption
        if item.category.startswith("swap"):
            assert sorted(item.caption.split()) == sorted(item.negative_caption.split())
        if item.category.startswith("add"):
            assert len(item.negative_caption.split()) > len(item.caption.split())


def test_truth_checker_is_not_vacuous():
    a = {"colour_name": "red", "name": "square", "size": "small", "fill": "solid", "box": [0, 0, 10, 10]}
    b = {"colour_name": "blue", "name": "circle", "size": "large", "fill": "striped", "box": [20, 0, 40, 20]}
    assert caption_is_true("a red square left of a blue circle", [a, b])
    assert not caption_is_true("a red square right of a blue circle", [a, b])
    assert not caption_is_true("a blue square left of a red circle", [a, b])
    assert caption_is_true("a small red square left of a striped blue circle", [a, b])
    assert not caption_is_true("a large red square left of a blue circle", [a, b])
    assert not caption_is_true("a red square left of a blue circle and a green star", [a, b])


# ------------------------------------------------------------------------------------------------
# Determinism
# ------------------------------------------------------------------------------------------------


def test_same_seed_same_hash_other_seed_other_hash(hs, tmp_path):
    _, manifest = hs
    again = generate(HiershapesParams(seed=3, **SMALL), tmp_path / "again", jobs=2)  # jobs do not matter
    assert again["content_hash"] == manifest["content_hash"]
    other = generate(HiershapesParams(seed=4, **SMALL), tmp_path / "other", jobs=1)
    assert other["content_hash"] != manifest["content_hash"]
