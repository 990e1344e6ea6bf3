"""Hard negatives on hiershapes-style captions: the edit touches only its slot, and the result is false.

Scenes are built here (an independent scene-graph fixture and truth checker), in the hiershapes
caption form "a small striped red square left of a large solid blue circle and above a ...": every
object of the scene is described, and no two objects share (class, colour) — the premise under which a
text-only edit is provably false. When the data helper's scene sampler is importable, its scene graphs
(the "scene" field of the grounded JSON) are checked the same way.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from argent.data.hiershapes import scene as scene_mod
from argent.data.hiershapes.params import DEFAULT_PALETTE
from argent.data.hiershapes.vocab import Vocabulary
from argent.negatives.cli import main
from argent.negatives.config import MiningConfig
from argent.negatives.generator import NegativeGenerator

SHAPES = ("square", "rectangle", "rhombus", "trapezoid", "triangle", "pentagon", "hexagon", "octagon",
          "circle", "semicircle", "star", "heart")
COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black")
SIZES = ("small", "medium", "large")
FILLS = ("solid", "striped", "outlined")
RELATIONS = ("left of", "right of", "above", "below")


@dataclass(frozen=True)
class Obj:
    shape: str
    colour: str
    size: str
    fill: str
    x: float
    y: float  # image coordinates: y grows downwards

    @property
    def words(self) -> set[str]:
        return {self.shape, self.colour, self.size, self.fill}


def holds(rel: str, a: Obj, b: Obj) -> bool:
    """``a rel b`` by the sign of the centre offset: lenient (either axis), so falsity is the strict claim."""
    return {"left of": a.x < b.x, "right of": a.x > b.x, "above": a.y < b.y, "below": a.y > b.y}[rel]


def describe(o: Obj) -> str:
    article = "an" if o.size[0] in "aeiou" else "a"
    return f"{article} {o.size} {o.fill} {o.colour} {o.shape}"


def caption_of(objs: list[Obj]) -> str:
    """"D0 rel D1 and rel D2" with the first relation (in RELATIONS order) that holds."""
    parts = [describe(objs[0])]
    for i, o in enumerate(objs[1:]):
        rel = next(r for r in RELATIONS if holds(r, objs[0], o))
        parts.append(("" if i == 0 else "and ") + f"{rel} {describe(o)}")
    return " ".join(parts)


def is_true(caption: str, objs: list[Obj]) -> bool:
    """Does some assignment of scene objects satisfy the caption? Unknown words match nothing."""
    words = caption.split()
    # Split into noun phrases and the relations between the anchor and each later phrase.
    nps: list[list[str]] = [[]]
    rels: list[str] = []
    i = 0
    while i < len(words):
        two = " ".join(words[i:i + 2])
        if two in ("left of", "right of"):
            rels.append(two)
            nps.append([])
            i += 2
        elif words[i] in ("above", "below"):
            rels.append(words[i])
            nps.append([])
            i += 1
        elif words[i] in ("and", "a", "an"):
            i += 1
        else:
            nps[-1].append(words[i])
            i += 1

    def matches(np_words: list[str], o: Obj) -> bool:
        return bool(np_words) and np_words[-1] == o.shape and set(np_words[:-1]) <= o.words

    for anchor in objs:
        if not matches(nps[0], anchor):
            continue
        if all(any(b is not anchor and matches(np, b) and holds(rel, anchor, b) for b in objs)
               for rel, np in zip(rels, nps[1:])):
            return True
    return False


def random_scene(rng: random.Random) -> list[Obj]:
    n = rng.choice((2, 2, 3))
    pairs: set[tuple[str, str]] = set()
    objs = []
    while len(objs) < n:
        shape, colour = rng.choice(SHAPES), rng.choice(COLOURS)
        if (shape, colour) in pairs:  # the hiershapes invariant
            continue
        pairs.add((shape, colour))
        objs.append(Obj(shape, colour, rng.choice(SIZES), rng.choice(FILLS), rng.random(), rng.random()))
    return objs


SCENES = [random_scene(random.Random(i)) for i in range(60)]


def test_truth_checker_is_discriminative():
    scene = [Obj("square", "red", "small", "striped", 0.1, 0.5), Obj("circle", "blue", "large", "solid", 0.9, 0.5)]
    assert caption_of(scene) == "a small striped red square left of a large solid blue circle"
    assert is_true(caption_of(scene), scene)
    for false in ("a small striped red square right of a large solid blue circle",
                  "a small striped blue square left of a large solid red circle",
                  "a small striped red circle left of a large solid blue square",
                  "a small striped red box left of a large solid blue circle",
                  "a large striped red square left of a large solid blue circle"):
        assert not is_true(false, scene), false
    assert all(is_true(caption_of(s), s) for s in SCENES)


def _check_edit(row: dict, caption: str) -> None:
    """Only the slot changes (replace) or exactly two content tokens trade places (swap);
    an "a"/"an" right before an edited token may change to agree with it, nothing else."""
    old, new = caption.split(), row["negative"].split()
    assert len(old) == len(new)
    slot = row["slot"]
    diff = {i for i, (a, b) in enumerate(zip(old, new)) if a != b}
    articles = {i for i in diff if {old[i], new[i]} == {"a", "an"}}
    content = diff - articles
    assert all(i + 1 in content for i in articles), (caption, row["negative"])
    for i, word in enumerate(new):  # the article agrees with its word in the negative
        if word in ("a", "an"):
            assert word == ("an" if new[i + 1][0] in "aeiou" else "a"), row["negative"]
    assert slot in content and old[slot] == row["old_word"] and new[slot] == row["new_word"]
    if row["operator"].startswith("replace"):
        assert content == {slot}, (caption, row["negative"])
    else:
        assert len(content) == 2, (caption, row["negative"])
        (other,) = content - {slot}
        assert (new[slot], new[other]) == (old[other], old[slot])


@pytest.mark.parametrize("operator", ["replace_noun", "replace_att", "swap_noun", "swap_att"])
def test_operator_edits_only_its_slot_and_is_false(operator, wordnet, norms):
    generator = NegativeGenerator(MiningConfig(operators=[operator]), wordnet=wordnet, norms=norms)
    made = 0
    for k, scene in enumerate(SCENES):
        caption = caption_of(scene)
        for mode in ("concrete", "abstract", "random"):
            row = generator.generate(f"scene{k}", caption, mode).row
            if row is None:
                continue
            made += 1
            assert row["operator"] == operator
            _check_edit(row, caption)
            assert not is_true(row["negative"], scene), (caption, row["negative"])
            old, new = row["old_word"], row["new_word"]
            if operator == "replace_att":  # stays in its family
                family = next(f for f in (COLOURS, SIZES, FILLS) if old in f)
                others = {w for f in (COLOURS, SIZES, FILLS, SHAPES) if f is not family for w in f}
                assert new not in others and new != old
            if operator == "replace_noun":
                assert new not in COLOURS + SIZES + FILLS and new.isalpha()
    # Some shapes have no co-hyponym under their first sense (circle) and some scenes no same-family
    # adjective pair, but every operator must produce for most of the 180 (scene, mode) cases.
    assert made >= 120, f"{operator}: only {made} negatives"


def test_all_operators_together_are_false(wordnet, norms):
    generator = NegativeGenerator(MiningConfig(), wordnet=wordnet, norms=norms)
    operators = set()
    for k, scene in enumerate(SCENES):
        caption = caption_of(scene)
        for mode in ("concrete", "abstract", "random"):
            row = generator.generate(f"scene{k}", caption, mode).row
            assert row is not None, (caption, mode)
            _check_edit(row, caption)
            assert not is_true(row["negative"], scene), (caption, row["negative"])
            operators.add(row["operator"])
    assert operators == {"replace_noun", "replace_att", "swap_noun", "swap_att"}


def _data_helper_scenes(n: int) -> list[tuple[str, list[Obj]]]:
    """(level-4 caption, objects) from the data helper's sampler, via its grounded JSON "scene" field."""
    vocab = Vocabulary.load()
    params = scene_mod.SceneParams()
    out = []
    for i in range(n):
        scene = scene_mod.sample_scene(scene_mod.scene_rng(0, "train", i), vocab, DEFAULT_PALETTE, params)
        record = scene_mod.grounded_json(scene, params.image_size)
        objs = [Obj(o["name"], o["colour_name"], o["size"], o["fill"], (o["box"][0] + o["box"][2]) / 2,
                    (o["box"][1] + o["box"][3]) / 2) for o in record["scene"]["objects"]]
        out.append((record["caption"], objs))
    return out


def test_data_helper_scenes_are_false(wordnet, norms):
    generator = NegativeGenerator(MiningConfig(), wordnet=wordnet, norms=norms)
    scenes = _data_helper_scenes(40)
    made = 0
    for k, (caption, objs) in enumerate(scenes):
        assert is_true(caption, objs), caption  # the checker reads their captions as true
        for mode in ("concrete", "abstract", "random"):
            row = generator.generate(f"dh{k}", caption, mode).row
            if row is None:
                continue
            made += 1
            _check_edit(row, caption)
            assert not is_true(row["negative"], objs), (caption, row["negative"])
    assert made >= len(scenes)


def _write_shard(path: Path, samples: dict[str, dict]) -> None:
    """A grounded webdataset shard: <key>.jpg + <key>.json (caption, boxes, "scene"), via tarfile."""
    from PIL import Image

    jpg = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(jpg, format="JPEG")
    with tarfile.open(path, "w") as tar:
        for key, record in samples.items():
            for ext, data in (("jpg", jpg.getvalue()), ("json", json.dumps(record).encode())):
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def test_mine_grounded_shards_false_for_their_scene(nltk_data, tmp_path):
    """``argent mine`` on grounded shards (the data helper's reader) -> every negative is false for
    the scene graph stored in that sample's JSON."""
    samples = {f"{k:06d}": {"caption": caption_of(scene), "width": 8, "height": 8, "noun_chunks": [], "ref_exps": [],
                            "scene": {"objects": [dataclasses.asdict(o) for o in scene]}}
               for k, scene in enumerate(SCENES[:30])}
    for shard in range(2):
        _write_shard(tmp_path / f"shard-{shard:06d}.tar", dict(list(samples.items())[shard * 15:(shard + 1) * 15]))
    out = tmp_path / "hiershapes.parquet"
    assert main([str(tmp_path / "shard-*.tar"), "--out", str(out), "--nltk-data", str(nltk_data)]) == 0
    table = pl.read_parquet(out)
    assert table.height == 90  # 30 captions x 3 modes
    for row in table.iter_rows(named=True):
        record = samples[row["key"]]
        assert row["caption"] == record["caption"]
        scene = [Obj(**o) for o in record["scene"]["objects"]]
        assert not is_true(row["negative"], scene), (row["caption"], row["negative"])
