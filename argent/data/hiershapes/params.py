"""hiershapes' parameters (``argent synth``, the ``hiershapes.params`` of the workflow config) and
the context every split is drawn with: the selected vocabulary, the colour palette, the scene
parameters (argent/data/hiershapes/generate.py writes the data set from them).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from argent.data.hiershapes.scene import SceneParams
from argent.data.hiershapes.shapes import aspect_of
from argent.data.hiershapes.vocab import Vocabulary
from argent.data.hiershapes.wordnet_subtree import DEFAULT_CLASSES, DEFAULT_COLOURS

DEFAULT_PALETTE: dict[str, tuple[int, int, int]] = {
    "red.n.01": (220, 30, 30), "orange.n.02": (245, 140, 20), "yellow.n.01": (235, 205, 20),
    "green.n.01": (40, 160, 60), "blue.n.01": (30, 80, 220), "purple.n.01": (130, 50, 170),
    "pink.n.01": (245, 130, 190), "brown.n.01": (125, 75, 35), "black.n.01": (25, 25, 25),
    "white.n.02": (250, 250, 250), "gray.n.01": (128, 128, 128),
}


@dataclass
class HiershapesParams:
    """Every generator parameter; all of it is recorded in the manifest and changes the hash."""

    seed: int = 0
    train_scenes: int = 20_000
    val_scenes: int = 1_000
    test_scenes: int = 1_000
    pep_val_scenes: int = 0  # hierarcaps_val/: a PEP validation split, scenes disjoint from the test pool
    per_class: int = 20
    # classification_val/ (zero-shot validation for tuning) images per class; None = per_class. Its
    # own key lets the test folder grow without growing the validation split the study scores.
    val_per_class: int | None = None
    shard_size: int = 500
    image_size: int = 64
    min_objects: int = 1
    max_objects: int = 3
    count_weights: list[float] = field(default_factory=list)  # per object count; [] = uniform
    classes: list[str] = field(default_factory=lambda: list(DEFAULT_CLASSES))
    colours: list[str] = field(default_factory=lambda: list(DEFAULT_COLOURS))
    palette: dict[str, list[int]] = field(default_factory=dict)  # RGB overrides by colour synset
    sizes: dict[str, list[float]] = field(default_factory=lambda: {
        "small": [0.22, 0.28], "medium": [0.32, 0.38], "large": [0.42, 0.48]})
    fills: list[str] = field(default_factory=lambda: ["solid", "striped", "outlined"])
    relations: list[str] = field(default_factory=lambda: ["left of", "right of", "above", "below"])
    level2_depth: int = 3
    # Share of training/validation objects whose caption names a random ancestor of their class
    # ("a small solid red polygon"): captions of mixed generality, as web captions are, so the text
    # tower meets the hypernyms that the entailment benchmarks ask about. 0 = always the class.
    general_rate: float = 0.0
    # Weights of caption levels 1-4 ("a shape", "a polygon", "a red square", the full caption) for
    # training/validation records: PEP asks about general levels that level-4 captions never name
    # (docs/hiershapes.md). [] = level 4 always (the data stay byte-identical).
    caption_levels: list[float] = field(default_factory=list)
    background: list[int] = field(default_factory=lambda: [235, 235, 235])
    colour_jitter: int = 10
    jpeg_quality: int = 95
    supersample: int = 4
    taxonomy: str = ""  # "" = the shipped argent/resources/hiershapes_taxonomy.tsv

    @property
    def classification_val_per_class(self) -> int:
        """Images per class of ``classification_val/`` (``val_per_class``, else ``per_class``)."""
        return self.per_class if self.val_per_class is None else self.val_per_class

    @property
    def min_box_area(self) -> int:
        """HyCoCLIP's 32·32 px at 224 px, scaled to this canvas; every object box is larger."""
        return round(1024 * (self.image_size / 224) ** 2)

    def scene_params(self) -> SceneParams:
        return SceneParams(
            image_size=self.image_size, min_objects=self.min_objects, max_objects=self.max_objects,
            count_weights=tuple(float(w) for w in self.count_weights),
            sizes={k: (float(v[0]), float(v[1])) for k, v in self.sizes.items()}, fills=tuple(self.fills),
            relations=tuple(self.relations), level2_depth=self.level2_depth, colour_jitter=self.colour_jitter,
            min_box_area=self.min_box_area,
        )

    def check(self) -> None:
        for name in ("train_scenes", "val_scenes", "test_scenes", "pep_val_scenes", "per_class", "val_per_class"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0")
        if self.shard_size < 1 or self.image_size < 16 or self.supersample < 1:
            raise ValueError("shard_size >= 1, image_size >= 16 and supersample >= 1 are required")
        if not 0.0 <= self.general_rate <= 1.0:
            raise ValueError("general_rate: a probability in [0, 1]")
        if self.caption_levels and (len(self.caption_levels) != 4 or min(self.caption_levels) < 0
                                    or sum(self.caption_levels) <= 0):
            raise ValueError("caption_levels: four non-negative weights (levels 1..4) with a positive sum, or []")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError("jpeg_quality: 1..100")
        if len(self.background) != 3 or any(not 0 <= c <= 255 for c in self.background):
            raise ValueError("background: three values in 0..255")
        self.scene_params().check()


@dataclass(frozen=True)
class Context:
    """What every split writer draws with: the parameters, the selected vocabulary, the palette."""

    params: HiershapesParams
    vocab: Vocabulary
    palette: dict[str, tuple[int, int, int]]
    scene: SceneParams


@lru_cache(maxsize=4)
def _context_cached(params_json: str) -> Context:
    params = HiershapesParams(**json.loads(params_json))
    params.check()
    vocab = Vocabulary.load(params.taxonomy or None).select(params.classes, params.colours)
    palette = {**DEFAULT_PALETTE, **{k: tuple(v) for k, v in params.palette.items()}}
    missing = [c.synset for c in vocab.colours if c.synset not in palette]
    if missing:
        raise ValueError(f"palette: no RGB for colour(s) {missing}; give them in palette: {{synset: [r, g, b]}}")
    for c in vocab.classes:  # every class must be drawable
        aspect_of(c.synset)
    return Context(params, vocab, palette, params.scene_params())


def context(params: HiershapesParams) -> Context:
    """The parameters' checked vocabulary, palette and scene parameters (built once per parameter set
    in a process, then cached)."""
    return _context_cached(json.dumps(asdict(params), sort_keys=True))
