"""hiershapes scene graphs: sampling, relations, captions at four levels, compositional negatives.

A scene has 1–3 objects, each with a class (WordNet shape synset), a colour (WordNet colour
synset), a size, a fill style and a tight pixel box; boxes never overlap. Object 0 is the anchor:
the relations are "object 0 <rel> object i" from box centres (the axis with the larger offset wins;
image y grows downwards). No two objects share (class, colour), so every description in a caption
names exactly one object; this is what makes the compositional negatives provably false.

Captions (general → specific), e.g. for a small striped red square left of a large blue circle:
1. "a shape" (the taxonomy root), 2. "a polygon" (the anchor's ancestor at ``level2_depth``),
3. "a red square", 4. "a small striped red square left of a large solid blue circle".
Level 4 is the grounded caption; each object's phrase is a ``noun_chunks`` span with its box, and
"<obj 0> <rel> <obj 1>" is a ``ref_exps`` span with the union box.

Every random choice comes from one ``numpy.random.Generator`` per scene, seeded by
(seed, split, index), so any scene can be regenerated alone and shards can be built in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from argent.data.hiershapes.shapes import aspect_of
from argent.data.hiershapes.vocab import Vocabulary

OPPOSITE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
SPLIT_IDS = {"train": 1, "val": 2, "test": 3, "classification": 4, "classification_val": 5, "pep_val": 6}


@dataclass(frozen=True)
class SceneParams:
    """What scenes look like (a subset of the generator's parameters)."""

    image_size: int = 64
    min_objects: int = 1
    max_objects: int = 3
    # Relative frequency of each object count min_objects..max_objects; () = uniform. More
    # one-object scenes make the caption name exactly what the image shows (docs/hiershapes.md).
    count_weights: tuple[float, ...] = ()
    sizes: dict[str, tuple[float, float]] = field(default_factory=lambda: {
        "small": (0.22, 0.28), "medium": (0.32, 0.38), "large": (0.42, 0.48)})
    fills: tuple[str, ...] = ("solid", "striped", "outlined")
    relations: tuple[str, ...] = ("left of", "right of", "above", "below")
    level2_depth: int = 3
    colour_jitter: int = 10
    min_box_area: int = 84  # every box's area is above this (HyCoCLIP's 32² scaled to the canvas)

    def check(self) -> None:
        if not 1 <= self.min_objects <= self.max_objects:
            raise ValueError(f"min_objects/max_objects: need 1 <= {self.min_objects} <= {self.max_objects}")
        for rel in self.relations:
            if rel not in OPPOSITE or OPPOSITE[rel] not in self.relations:
                raise ValueError(f"relations: {rel!r} needs its opposite; allowed pairs: {OPPOSITE}")
        if self.max_objects > 1 and not self.relations:
            raise ValueError("relations: scenes with several objects need at least one relation pair")
        for name, (lo, hi) in self.sizes.items():
            if not 0 < lo <= hi <= 0.5:
                raise ValueError(f"sizes.{name}: ({lo}, {hi}) must lie in (0, 0.5] (fraction of the canvas side)")
        if not self.fills:
            raise ValueError("fills: at least one fill style")
        if self.count_weights:
            n = self.max_objects - self.min_objects + 1
            if len(self.count_weights) != n or any(w < 0 for w in self.count_weights) or sum(self.count_weights) <= 0:
                raise ValueError(f"count_weights: {list(self.count_weights)} must be {n} non-negative weights "
                                 f"(object counts {self.min_objects}..{self.max_objects}) with a positive sum")


@dataclass(frozen=True)
class SceneObject:
    synset: str
    wnid: str
    name: str
    colour: str  # colour synset
    colour_name: str
    rgb: tuple[int, int, int]
    size: str
    fill: str
    box: tuple[int, int, int, int]  # pixels x0, y0, x1, y1 (x1, y1 exclusive)

    @property
    def centre(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2

    @property
    def pair(self) -> tuple[str, str]:
        return self.synset, self.colour


@dataclass(frozen=True)
class Scene:
    objects: tuple[SceneObject, ...]
    relations: tuple[str, ...]  # relations[i-1] relates object 0 to object i
    levels: tuple[str, str, str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "objects": [asdict(o) for o in self.objects],
            "relations": [[0, rel, i + 1] for i, rel in enumerate(self.relations)],
            "levels": list(self.levels),
        }


# ------------------------------------------------------------------------------------------------
# Text
# ------------------------------------------------------------------------------------------------


def with_article(words: Sequence[str]) -> str:
    text = " ".join(words)
    return ("an " if text[:1] in "aeiou" else "a ") + text


def describe(obj: SceneObject, *, size: str | None = None, fill: str | None = None, full: bool = True,
             colour_name: str | None = None, name: str | None = None) -> str:
    """"a small striped red square" (full) or "a red square"; keyword overrides build negatives."""
    words = [size or obj.size, fill or obj.fill] if full else [w for w in (size, fill) if w]
    return with_article([*words, colour_name or obj.colour_name, name or obj.name])


def compose(descriptions: Sequence[str], relations: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """"D0 rel1 D1 and rel2 D2" and the (start, end) span of each description."""
    caption = descriptions[0]
    spans = [(0, len(caption))]
    for i, (rel, desc) in enumerate(zip(relations, descriptions[1:])):
        caption += (" " if i == 0 else " and ") + rel + " "
        spans.append((len(caption), len(caption) + len(desc)))
        caption += desc
    return caption, spans


def relation(a: SceneObject, b: SceneObject, allowed: Sequence[str]) -> str | None:
    """Where a is relative to b, on the axis with the larger centre offset (among allowed axes);
    None when the allowed axes cannot tell (equal centres on the only axis)."""
    (ax, ay), (bx, by) = a.centre, b.centre
    dx, dy = bx - ax, by - ay
    use_x = "left of" in allowed and (abs(dx) >= abs(dy) or "above" not in allowed)
    if use_x:
        return None if dx == 0 else "left of" if dx > 0 else "right of"
    if "above" not in allowed or dy == 0:
        return None
    return "above" if dy > 0 else "below"


def anchored(scene: Scene, anchor: int, allowed: Sequence[str], full: bool = True) -> tuple[str, list[tuple[int, int]]]:
    """The caption that starts from object ``anchor`` (level 4 when anchor is 0 and full)."""
    order = [anchor] + [i for i in range(len(scene.objects)) if i != anchor]
    objs = [scene.objects[i] for i in order]
    rels = [relation(objs[0], o, allowed) for o in objs[1:]]
    if None in rels:
        raise ValueError("relation undefined for this anchor")
    return compose([describe(o, full=full) for o in objs], rels)


def grounded_json(scene: Scene, image_size: int, names: Sequence[str] | None = None, level: int = 4) -> dict[str, Any]:
    """The GRIT-style record of a scene: its caption at ``level`` (4: the full caption), spans with
    normalised boxes, the scene graph. ``names`` replaces each object's noun in a level-4 caption (a
    hypernym, see ``general_rate``); the scene graph keeps the true classes. Levels 1-3 ("a shape" ...
    "a red square") name the anchor only: one span, the whole caption, on the anchor's box."""
    s = float(image_size)

    def norm(box: Sequence[int]) -> list[float]:
        return [box[0] / s, box[1] / s, box[2] / s, box[3] / s]

    if level != 4:
        if not 1 <= level <= 3:
            raise ValueError(f"caption level {level}: 1..4")
        caption = scene.levels[level - 1]
        return {"caption": caption, "width": image_size, "height": image_size,
                "noun_chunks": [[0, len(caption), *norm(scene.objects[0].box), 1.0]],
                "ref_exps": [], "scene": scene.to_json()}
    caption, spans = compose([describe(o, name=n) for o, n in zip(scene.objects, names or [None] * len(scene.objects))],
                             scene.relations)
    noun_chunks = [[a, b, *norm(o.box), 1.0] for (a, b), o in zip(spans, scene.objects)]
    ref_exps = []
    if len(scene.objects) > 1:
        b0, b1 = scene.objects[0].box, scene.objects[1].box
        union = (min(b0[0], b1[0]), min(b0[1], b1[1]), max(b0[2], b1[2]), max(b0[3], b1[3]))
        ref_exps.append([0, spans[1][1], *norm(union), 1.0])
    return {"caption": caption, "width": image_size, "height": image_size,
            "noun_chunks": noun_chunks, "ref_exps": ref_exps, "scene": scene.to_json()}


def caption_level(weights: Sequence[float], rng: np.random.Generator) -> int:
    """A caption level 1..4 drawn with ``weights`` (see ``caption_levels``); 4 when there are none, so
    the default data stay byte-identical."""
    if not weights:
        return 4
    w = np.asarray(weights, dtype=float)
    return int(rng.choice(4, p=w / w.sum())) + 1


def general_names(scene: Scene, vocab: Vocabulary, rate: float, rng: np.random.Generator) -> list[str] | None:
    """Per object, its class name or, with probability ``rate``, a uniformly drawn ancestor's name
    (root included); None when ``rate`` is 0, so the default data stay byte-identical."""
    if rate <= 0.0:
        return None
    names = []
    for obj in scene.objects:
        ancestors = vocab.path(obj.synset)[:-1]
        general = ancestors and rng.random() < rate
        names.append(ancestors[int(rng.integers(len(ancestors)))].name if general else obj.name)
    return names


# ------------------------------------------------------------------------------------------------
# Sampling
# ------------------------------------------------------------------------------------------------


def scene_rng(seed: int, split: str, index: int, attempt: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, SPLIT_IDS[split], index, attempt])


def _box_size(rng: np.random.Generator, synset: str, size: str, params: SceneParams) -> tuple[int, int]:
    lo, hi = params.sizes[size]
    for _ in range(100):
        long_side = int(round(rng.uniform(lo, hi) * params.image_size))
        aspect = aspect_of(synset)
        w, h = (long_side, max(1, round(long_side / aspect))) if aspect >= 1 else (max(1, round(long_side * aspect)), long_side)
        if w * h > params.min_box_area:
            return w, h
    raise ValueError(f"sizes.{size}: a {synset} cannot reach a box area above {params.min_box_area} px "
                     f"on a {params.image_size}-px canvas; use larger sizes or a larger image_size")


def _place(rng: np.random.Generator, dims: Sequence[tuple[int, int]], image_size: int, tries: int = 200) -> list[tuple[int, int, int, int]] | None:
    """Non-overlapping boxes (1-px gap, 1-px margin) for the given (w, h), or None."""
    boxes: list[tuple[int, int, int, int]] = []
    for w, h in dims:
        for _ in range(tries):
            x0 = int(rng.integers(1, image_size - w)) if image_size - w > 1 else 0
            y0 = int(rng.integers(1, image_size - h)) if image_size - h > 1 else 0
            box = (x0, y0, x0 + w, y0 + h)
            if all(box[2] + 1 <= b[0] or b[2] + 1 <= box[0] or box[3] + 1 <= b[1] or b[3] + 1 <= box[1] for b in boxes):
                boxes.append(box)
                break
        else:
            return None
    return boxes


def _relations_defined(boxes: Sequence[tuple[int, int, int, int]], allowed: Sequence[str]) -> bool:
    """Every pair of objects has a relation on the allowed axes (any object may anchor a caption)."""
    if "left of" in allowed and "above" in allowed:
        return True  # distinct non-overlapping boxes never share both centre coordinates
    axis = (0, 2) if "left of" in allowed else (1, 3)
    centres = [box[axis[0]] + box[axis[1]] for box in boxes]
    return len(set(centres)) == len(centres)


def _jitter(rng: np.random.Generator, rgb: tuple[int, int, int], amount: int) -> tuple[int, int, int]:
    if amount <= 0:
        return rgb
    return tuple(int(np.clip(c + rng.integers(-amount, amount + 1), 0, 255)) for c in rgb)  # type: ignore[return-value]


def sample_scene(
    rng: np.random.Generator,
    vocab: Vocabulary,
    palette: dict[str, tuple[int, int, int]],
    params: SceneParams,
    *,
    n_objects: int | None = None,
    first_class: str | None = None,
) -> Scene:
    """A random scene; ``n_objects``/``first_class`` fix the count / the anchor's class."""
    classes, colours = vocab.classes, vocab.colours
    if n_objects is not None:
        n = n_objects
    elif params.count_weights:
        w = np.asarray(params.count_weights, dtype=float)
        n = params.min_objects + int(rng.choice(len(w), p=w / w.sum()))
    else:
        n = int(rng.integers(params.min_objects, params.max_objects + 1))
    if n > len(classes) * len(colours):
        raise ValueError(f"{n} objects need {n} distinct (class, colour) pairs; the vocabulary has fewer")
    size_names = list(params.sizes)
    for _ in range(50):
        picks: list[tuple[Any, Any]] = []
        while len(picks) < n:
            cls = vocab.concept(first_class) if (first_class and not picks) else classes[int(rng.integers(len(classes)))]
            col = colours[int(rng.integers(len(colours)))]
            if all((cls.synset, col.synset) != (c.synset, k.synset) for c, k in picks):
                picks.append((cls, col))
        sizes = [size_names[int(rng.integers(len(size_names)))] for _ in picks]
        fills = [params.fills[int(rng.integers(len(params.fills)))] for _ in picks]
        dims = [_box_size(rng, cls.synset, size, params) for (cls, _), size in zip(picks, sizes)]
        boxes = _place(rng, dims, params.image_size)
        if boxes is not None and _relations_defined(boxes, params.relations):
            break
    else:
        raise ValueError(f"could not place {n} objects on a {params.image_size}-px canvas; use smaller sizes")
    objects = tuple(
        SceneObject(cls.synset, cls.wnid, cls.name, col.synset, col.name, _jitter(rng, palette[col.synset], params.colour_jitter),
                    size, fill, box)
        for (cls, col), size, fill, box in zip(picks, sizes, fills, boxes)
    )
    relations = tuple(relation(objects[0], o, params.relations) for o in objects[1:])
    path = vocab.path(objects[0].synset)
    level2 = path[min(params.level2_depth, len(path) - 1)]
    level4, _ = compose([describe(o) for o in objects], relations)
    levels = (with_article([path[0].name]), with_article([level2.name]), describe(objects[0], full=False), level4)
    return Scene(objects, relations, levels)
