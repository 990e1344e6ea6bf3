"""hiershapes' compositional negatives (SugarCrepe's categories), exact because the scene graph is known: for each
category a scene supports, its caption and a caption that is provably false for it (argent/data/hiershapes/scene.py
builds the scene; splits.py writes the SugarCrepe-format items)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from argent.data.hiershapes.scene import OPPOSITE, Scene, SceneParams, compose, describe, with_article
from argent.data.hiershapes.vocab import Vocabulary

COMPOSITIONAL_CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")


def _short(scene: Scene, overrides: dict[int, dict[str, str]] | None = None, relations: Sequence[str] | None = None) -> str:
    overrides = overrides or {}
    descs = [describe(o, full=False, **overrides.get(i, {})) for i, o in enumerate(scene.objects)]
    return compose(descs, relations if relations is not None else scene.relations)[0]


def compositional_items(
    scene: Scene, vocab: Vocabulary, params: SceneParams, rng: np.random.Generator
) -> dict[str, tuple[str, str]]:
    """{category: (caption, negative caption)} for each category this scene supports.

    The positive names each object by colour and class ("a red square left of a blue circle").
    Each negative is false for the scene: it names a (class, colour) that is not in it, an
    attribute an object does not have, or the opposite relation.
    """
    objs = scene.objects
    pairs = {o.pair for o in objs}
    present_classes = {o.synset for o in objs}
    classes, colours = vocab.classes, vocab.colours
    positive = _short(scene)
    out: dict[str, tuple[str, str]] = {}

    def pick(seq: Sequence[Any]) -> Any:
        return seq[int(rng.integers(len(seq)))]

    # replace_obj: one object's class becomes one whose (class, colour) is absent
    k = int(rng.integers(len(objs)))
    options = [c for c in classes if (c.synset, objs[k].colour) not in pairs]
    if options:
        out["replace_obj"] = (positive, _short(scene, {k: {"name": pick(options).name}}))
    # replace_att: one object's colour becomes one whose (class, colour) is absent
    k = int(rng.integers(len(objs)))
    options = [c for c in colours if (objs[k].synset, c.synset) not in pairs]
    if options:
        out["replace_att"] = (positive, _short(scene, {k: {"colour_name": pick(options).name}}))
    # replace_rel: one relation becomes its opposite
    if len(objs) > 1:
        i = int(rng.integers(len(scene.relations)))
        rels = list(scene.relations)
        rels[i] = OPPOSITE[rels[i]]
        out["replace_rel"] = (positive, _short(scene, relations=rels))
    # swap_obj / swap_att: two objects exchange classes / colours (neither swapped pair exists)
    swappable = [(a, b) for a in range(len(objs)) for b in range(a + 1, len(objs))
                 if objs[a].synset != objs[b].synset and objs[a].colour != objs[b].colour
                 and (objs[b].synset, objs[a].colour) not in pairs and (objs[a].synset, objs[b].colour) not in pairs]
    if swappable:
        a, b = pick(swappable)
        out["swap_obj"] = (positive, _short(scene, {a: {"name": objs[b].name}, b: {"name": objs[a].name}}))
        a, b = pick(swappable)
        out["swap_att"] = (positive, _short(scene, {a: {"colour_name": objs[b].colour_name}, b: {"colour_name": objs[a].colour_name}}))
    # add_obj: a colour-class pair whose class is not in the scene at all
    absent = [c for c in classes if c.synset not in present_classes]
    if absent:
        out["add_obj"] = (positive, f"{positive} and {with_article([pick(colours).name, pick(absent).name])}")
    # add_att: a size or fill the object does not have
    k = int(rng.integers(len(objs)))
    if rng.integers(2) == 0 and len(params.sizes) > 1:
        out["add_att"] = (positive, _short(scene, {k: {"size": pick([s for s in params.sizes if s != objs[k].size])}}))
    elif len(params.fills) > 1:
        out["add_att"] = (positive, _short(scene, {k: {"fill": pick([f for f in params.fills if f != objs[k].fill])}}))
    return {c: out[c] for c in COMPOSITIONAL_CATEGORIES if c in out}
