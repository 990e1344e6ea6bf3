"""hiershapes data set writer: every split in the real formats, a manifest, a content hash.

Layout under ``out`` (see the contract):
- ``train/shard-%06d.tar``, ``val/shard-%06d.tar``: grounded webdataset shards (``<key>.jpg`` +
  ``<key>.json`` with caption, width, height, noun_chunks, ref_exps, and the scene graph);
- ``classification/<wnid>/<n>.jpg`` + ``class_names.tsv`` + ``taxonomy.txt`` (``parent child`` wnids):
  one-object scenes, ``per_class`` per class; ``classification_val/``, its validation twin for
  tuning, ``val_per_class`` per class (null: ``per_class``);
- a test pool of scenes with pairwise-distinct captions, written three ways:
  ``retrieval/images/*.jpg`` + ``retrieval/dataset_hiershapes.json`` (Karpathy layout, split "test"),
  ``hierarcaps/hierarcaps_test.csv`` + ``hierarcaps/images/COCO_val2014_<12-digit id>.jpg``,
  ``sugarcrepe/<category>.json`` + ``sugarcrepe/images/<12-digit id>.jpg``;
- ``hierarcaps_val/`` (when ``pep_val_scenes`` > 0): the ``hierarcaps/`` layout for a PEP
  validation split, from its own scene stream, no caption shared with the test pool;
- ``scenes/{classification,test}.jsonl``: the scene graphs of the non-shard splits;
- ``manifest.json``: parameters, counts, the taxonomy file's sha256 and a content hash (sha256 over
  every other file's path and bytes).

Scenes are seeded by (seed, split, index), so the output does not depend on ``jobs``; shards and
the two small splits are built in parallel by a process pool. The whole folder is built beside
``out`` and renamed into place at the end, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import multiprocessing
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from argent.data.hiershapes.scene import (
    COMPOSITIONAL_CATEGORIES,
    SPLIT_IDS,
    Scene,
    SceneParams,
    anchored,
    caption_level,
    compositional_items,
    general_names,
    grounded_json,
    sample_scene,
    scene_rng,
)
from argent.data.hiershapes.shapes import Drawn, aspect_of, render
from argent.data.hiershapes.vocab import Vocabulary
from argent.data.hiershapes.wordnet_subtree import DEFAULT_CLASSES, DEFAULT_COLOURS
from argent.data.manifest import SHARD_NAME
from argent.data.shards import ShardWriter

FORMAT_VERSION = 1
MARKER = ".argent-hiershapes"  # says argent synth made the folder, so --overwrite may replace it
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
class _Context:
    params: HiershapesParams
    vocab: Vocabulary
    palette: dict[str, tuple[int, int, int]]
    scene: SceneParams


@lru_cache(maxsize=4)
def _context_cached(params_json: str) -> _Context:
    params = HiershapesParams(**json.loads(params_json))
    params.check()
    vocab = Vocabulary.load(params.taxonomy or None).select(params.classes, params.colours)
    palette = {**DEFAULT_PALETTE, **{k: tuple(v) for k, v in params.palette.items()}}
    missing = [c.synset for c in vocab.colours if c.synset not in palette]
    if missing:
        raise ValueError(f"palette: no RGB for colour(s) {missing}; give them in palette: {{synset: [r, g, b]}}")
    for c in vocab.classes:  # every class must be drawable
        aspect_of(c.synset)
    return _Context(params, vocab, palette, params.scene_params())


def _context(params: HiershapesParams) -> _Context:
    return _context_cached(json.dumps(asdict(params), sort_keys=True))


# ------------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------------


def _jpeg(ctx: _Context, scene: Scene) -> bytes:
    drawn = [Drawn(o.synset, o.rgb, o.fill, o.box) for o in scene.objects]
    image = render(ctx.params.image_size, drawn, tuple(ctx.params.background), ctx.params.supersample)
    buf = io.BytesIO()
    # 4:4:4 chroma: 4:2:0 would smear colour across the small shapes' edges.
    image.save(buf, "JPEG", quality=ctx.params.jpeg_quality, subsampling=0)
    return buf.getvalue()


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _dump_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")


# ------------------------------------------------------------------------------------------------
# Split tasks (run in worker processes)
# ------------------------------------------------------------------------------------------------


_GENERAL_STREAM = 7  # its own random stream: the scenes (and every other split) do not change with general_rate
_LEVEL_STREAM = 8  # likewise for caption_levels


def _grounded_shard(params: HiershapesParams, root: str, split: str, shard: int, start: int, count: int) -> dict[str, Any]:
    ctx = _context(params)
    n_objects: Counter[int] = Counter()
    with ShardWriter(Path(root) / split / SHARD_NAME.format(shard)) as writer:
        for index in range(start, start + count):
            scene = sample_scene(scene_rng(params.seed, split, index), ctx.vocab, ctx.palette, ctx.scene)
            n_objects[len(scene.objects)] += 1
            names = general_names(scene, ctx.vocab, params.general_rate, np.random.default_rng(
                [params.seed, SPLIT_IDS[split], index, _GENERAL_STREAM]))
            level = caption_level(params.caption_levels, np.random.default_rng(
                [params.seed, SPLIT_IDS[split], index, _LEVEL_STREAM]))
            record = grounded_json(scene, params.image_size, names, level)
            writer.write(f"{split}-{index:08d}", {"jpg": _jpeg(ctx, scene), "json": _dump_json(record)})
    return {"split": split, "samples": count, "objects": dict(n_objects)}


def _classification(params: HiershapesParams, root: str, split: str = "classification") -> dict[str, Any]:
    """One single-object image folder: ``classification`` (test) or ``classification_val`` (for tuning)."""
    ctx = _context(params)
    out = Path(root) / split
    out.mkdir(parents=True, exist_ok=True)
    classes = sorted(ctx.vocab.classes, key=lambda c: c.wnid)
    per_class = params.per_class if split == "classification" else params.classification_val_per_class
    lines = []
    index = 0
    for cls in classes:
        for n in range(per_class):
            rng = scene_rng(params.seed, split, index)
            scene = sample_scene(rng, ctx.vocab, ctx.palette, ctx.scene, n_objects=1, first_class=cls.synset)
            _write_bytes(out / cls.wnid / f"{n:06d}.jpg", _jpeg(ctx, scene))
            lines.append(json.dumps({"path": f"{split}/{cls.wnid}/{n:06d}.jpg", "scene": scene.to_json()}, sort_keys=True))
            index += 1
    (out / "class_names.tsv").write_text("".join(f"{c.wnid}\t{c.name}\n" for c in classes), encoding="utf-8")
    (out / "taxonomy.txt").write_text("".join(f"{p} {c}\n" for p, c in ctx.vocab.edges()), encoding="utf-8")
    _write_bytes(Path(root) / "scenes" / f"{split}.jsonl", ("\n".join(lines) + "\n").encode() if lines else b"")
    return {"split": split, "samples": index, "classes": len(classes)}


def _test_pool(params: HiershapesParams, split: str = "test", count: int | None = None,
               exclude: set[str] | None = None) -> list[tuple[int, Scene, list[str]]]:
    """(COCO-style id, scene, retrieval captions) with every retrieval caption unique in the pool
    and absent from ``exclude``."""
    ctx = _context(params)
    seen: set[str] = set(exclude or ())
    pool = []
    count = params.test_scenes if count is None else count
    for index in range(count):
        for attempt in range(1000):
            scene = sample_scene(scene_rng(params.seed, split, index, attempt), ctx.vocab, ctx.palette, ctx.scene)
            captions = [anchored(scene, k, ctx.scene.relations)[0] for k in range(len(scene.objects))]
            if not seen.intersection(captions) and len(set(captions)) == len(captions):
                break
        else:
            raise ValueError(f"{split}: cannot find {count} scenes with distinct captions; "
                             "lower test_scenes or enlarge the vocabulary")
        seen.update(captions)
        pool.append((index + 1, scene, captions))
    return pool


def _pep_val_split(params: HiershapesParams, root: str) -> dict[str, Any]:
    """``hierarcaps_val/``: the HierarCaps layout of ``hierarcaps/`` from its own scene stream, no
    caption shared with the test pool, for tuning on PEP without touching the test split."""
    ctx = _context(params)
    test_captions = {c for _, _, captions in _test_pool(params) for c in captions}
    rows = []
    for row, (image_id, scene, _) in enumerate(_test_pool(params, "pep_val", params.pep_val_scenes, test_captions)):
        name = f"COCO_val2014_{image_id:012d}.jpg"
        _write_bytes(Path(root) / "hierarcaps_val" / "images" / name, _jpeg(ctx, scene))
        rows.append([str(row), " => ".join(scene.levels), f"hiershapes/val2014/{name}"])
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["id", "captions", "image_url"])
    writer.writerows(rows)
    _write_bytes(Path(root) / "hierarcaps_val" / "hierarcaps_test.csv", buf.getvalue().encode("utf-8"))
    return {"split": "pep_val", "samples": len(rows)}


def _test_splits(params: HiershapesParams, root: str) -> dict[str, Any]:
    ctx = _context(params)
    root_path = Path(root)
    pool = _test_pool(params)
    karpathy, csv_rows, scene_lines = [], [], []
    by_category: dict[str, dict[str, dict[str, str]]] = {c: {} for c in COMPOSITIONAL_CATEGORIES}
    sentid = 0
    for row, (image_id, scene, captions) in enumerate(pool):
        jpeg = _jpeg(ctx, scene)
        name = f"{image_id:012d}.jpg"
        _write_bytes(root_path / "retrieval" / "images" / name, jpeg)
        _write_bytes(root_path / "hierarcaps" / "images" / f"COCO_val2014_{name}", jpeg)
        sentences = []
        for caption in captions:
            sentences.append({"raw": caption, "tokens": caption.split(), "imgid": row, "sentid": sentid})
            sentid += 1
        karpathy.append({"filename": name, "filepath": "", "split": "test", "imgid": row, "cocoid": image_id,
                         "sentids": [s["sentid"] for s in sentences], "sentences": sentences})
        csv_rows.append([str(row), " => ".join(scene.levels), f"hiershapes/val2014/COCO_val2014_{name}"])
        items = compositional_items(scene, ctx.vocab, ctx.scene, scene_rng(params.seed, "test", image_id, 10_000))
        for category, (caption, negative) in items.items():
            by_category[category][str(len(by_category[category]))] = {"filename": name, "caption": caption, "negative_caption": negative}
        if items:
            _write_bytes(root_path / "sugarcrepe" / "images" / name, jpeg)
        scene_lines.append(json.dumps({"image_id": image_id, "scene": scene.to_json(), "retrieval_captions": captions,
                                       "compositional": {c: list(v) for c, v in items.items()}}, sort_keys=True))
    _write_bytes(root_path / "retrieval" / "dataset_hiershapes.json", _dump_json({"dataset": "hiershapes", "images": karpathy}))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["id", "captions", "image_url"])
    writer.writerows(csv_rows)
    _write_bytes(root_path / "hierarcaps" / "hierarcaps_test.csv", buf.getvalue().encode("utf-8"))
    for category, items in by_category.items():
        _write_bytes(root_path / "sugarcrepe" / f"{category}.json", json.dumps(items, indent=1, sort_keys=False).encode("utf-8"))
    _write_bytes(root_path / "scenes" / "test.jsonl", ("\n".join(scene_lines) + "\n").encode() if scene_lines else b"")
    return {"split": "test", "samples": len(pool), "sugarcrepe": {c: len(v) for c, v in by_category.items()}}


# ------------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------------


def content_hash(root: str | Path, exclude: Iterable[str] = ("manifest.json", MARKER)) -> str:
    """sha256 over (relative path, sha256 of bytes) of every file under ``root``, sorted by path."""
    root = Path(root)
    skip = set(exclude)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _tasks(params: HiershapesParams, root: str) -> list[tuple[Any, tuple[Any, ...]]]:
    tasks: list[tuple[Any, tuple[Any, ...]]] = []
    for split, total in (("train", params.train_scenes), ("val", params.val_scenes)):
        for shard in range(math.ceil(total / params.shard_size)):
            start = shard * params.shard_size
            tasks.append((_grounded_shard, (params, root, split, shard, start, min(params.shard_size, total - start))))
    # The two sequential splits go first so they overlap with the many shard tasks.
    head = []
    if params.test_scenes:
        head.append((_test_splits, (params, root)))
    if params.pep_val_scenes:
        head.append((_pep_val_split, (params, root)))
    if params.per_class:
        head.append((_classification, (params, root)))
    if params.classification_val_per_class:
        head.append((_classification, (params, root, "classification_val")))
    return head + tasks


def _run(tasks: list[tuple[Any, tuple[Any, ...]]], jobs: int) -> list[dict[str, Any]]:
    if jobs <= 1 or len(tasks) <= 1:
        return [fn(*args) for fn, args in tasks]
    # fork where the platform has it: spawn/forkserver re-import the caller's __main__ (e.g. all of
    # torch) in every worker. The workers use only numpy, PIL and tarfile, never torch or OpenMP,
    # so threads the parent may hold cannot deadlock them.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = [pool.submit(fn, *args) for fn, args in tasks]
        return [f.result() for f in futures]


def generate(params: HiershapesParams, out: str | Path, *, jobs: int = 1, overwrite: bool = False) -> dict[str, Any]:
    """Write the data set to ``out``; returns the manifest."""
    params.check()
    ctx = _context(params)  # validates the vocabulary before any work
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out}: exists and is not empty; pass --overwrite to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        results = _run(_tasks(params, str(tmp)), jobs)
        counts: dict[str, Any] = {"train": 0, "val": 0, "train_shards": 0, "val_shards": 0, "classification": 0,
                                  "classification_val": 0, "pep_val": 0, "classes": len(ctx.vocab.classes), "test": 0, "objects_per_scene": {}}
        objects: Counter[int] = Counter()
        for r in results:
            counts[r["split"]] += r["samples"]
            if r["split"] in ("train", "val"):
                counts[f"{r['split']}_shards"] += 1
                objects.update({int(k): v for k, v in r["objects"].items()})
            if r["split"] == "test":
                counts["sugarcrepe"] = r["sugarcrepe"]
        counts["objects_per_scene"] = {str(k): objects[k] for k in sorted(objects)}
        manifest = {
            "name": "hiershapes",
            "format_version": FORMAT_VERSION,
            "parameters": asdict(params),
            "taxonomy_file": ctx.vocab.source,
            "taxonomy_sha256": ctx.vocab.digest,
            "min_box_area": params.min_box_area,
            "counts": counts,
            "content_hash": content_hash(tmp),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / MARKER).write_text("made by argent synth: `argent synth --overwrite` may replace this folder\n")
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
