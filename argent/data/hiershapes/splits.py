"""hiershapes' splits, each written by one task that a worker process runs (generate.py schedules them):
a grounded webdataset shard of ``train``/``val`` (``write_grounded_shard``), a single-object image
folder (``write_classification``), the test pool written three ways: retrieval, HierarCaps and
SugarCrepe (``write_test_splits``), and the PEP validation split (``write_pep_val_split``); with the
encoders they share (JPEG, JSON, a file's bytes). Every scene is seeded by (seed, split, index), so a
task's output does not depend on the process that runs it.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from argent.data.hiershapes.compositional import COMPOSITIONAL_CATEGORIES, compositional_items
from argent.data.hiershapes.params import Context, HiershapesParams, context
from argent.data.hiershapes.scene import (
    SPLIT_IDS,
    Scene,
    anchored,
    caption_level,
    general_names,
    grounded_json,
    sample_scene,
    scene_rng,
)
from argent.data.hiershapes.shapes import Drawn, render
from argent.data.manifest import SHARD_NAME
from argent.data.shards import ShardWriter

# ---- encoding ------------------------------------------------------------------------------------


def _jpeg(ctx: Context, scene: Scene) -> bytes:
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


# ---- the split tasks (run in worker processes) ---------------------------------------------------


_GENERAL_STREAM = 7  # its own random stream: the scenes (and every other split) do not change with general_rate
_LEVEL_STREAM = 8  # likewise for caption_levels


def write_grounded_shard(params: HiershapesParams, root: str, split: str, shard: int, start: int, count: int) -> dict[str, Any]:
    ctx = context(params)
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


def write_classification(params: HiershapesParams, root: str, split: str = "classification") -> dict[str, Any]:
    """One single-object image folder: ``classification`` (test) or ``classification_val`` (for tuning)."""
    ctx = context(params)
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
    ctx = context(params)
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


def write_pep_val_split(params: HiershapesParams, root: str) -> dict[str, Any]:
    """``hierarcaps_val/``: the HierarCaps layout of ``hierarcaps/`` from its own scene stream, no
    caption shared with the test pool, for tuning on PEP without touching the test split."""
    ctx = context(params)
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


def write_test_splits(params: HiershapesParams, root: str) -> dict[str, Any]:
    ctx = context(params)
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
