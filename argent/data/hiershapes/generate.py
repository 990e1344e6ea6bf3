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

Here: the schedule of the split tasks, the manifest and the content hash. The parameters and the
context each split is drawn with are params.py; the split tasks themselves, splits.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from argent.data.hiershapes.params import HiershapesParams, context
from argent.data.hiershapes.splits import (
    write_classification,
    write_grounded_shard,
    write_pep_val_split,
    write_test_splits,
)

FORMAT_VERSION = 1
MARKER = ".argent-hiershapes"  # says argent synth made the folder, so --overwrite may replace it


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
            tasks.append((write_grounded_shard, (params, root, split, shard, start, min(params.shard_size, total - start))))
    # The two sequential splits go first so they overlap with the many shard tasks.
    head = []
    if params.test_scenes:
        head.append((write_test_splits, (params, root)))
    if params.pep_val_scenes:
        head.append((write_pep_val_split, (params, root)))
    if params.per_class:
        head.append((write_classification, (params, root)))
    if params.classification_val_per_class:
        head.append((write_classification, (params, root, "classification_val")))
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


def generate(params: HiershapesParams, out: str | Path, *, jobs: int = 1, overwrite: bool = False,
             dataset_hash: str = "") -> dict[str, Any]:
    """Write the data set to ``out``; returns the manifest. ``dataset_hash``: the identity the workflow gives
    data of these parameters (``argent synth``: ``hiershapes-<hash of the parameters given>``), recorded in
    the manifest so that a config declaring another one is refused where the data are read
    (argent/data/inputs.py ``declared_hash_problem``)."""
    params.check()
    ctx = context(params)  # validates the vocabulary before any work
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
            **({"dataset_hash": dataset_hash} if dataset_hash else {}),
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
