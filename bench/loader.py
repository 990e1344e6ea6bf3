"""Training-loader throughput on real JPEGs, argent's loader beside open_clip's webdataset pipeline.

    python bench/loader.py                                  # 1,000 HierarCaps/COCO photos, workers 1 and 2
    python bench/loader.py --images 400 --batches 4 --reps 2 --workers 1   # a quick look
    python bench/loader.py --profile argent                 # cProfile of one in-process loader (no workers)
    python bench/loader.py --contenders argent-argent argent-argent-prev   # shared-memory batches vs before
    python bench/loader.py --images-dir DIR --captions none # any folder of photos, a fixed caption

The photos (``../shared/data/hierarcaps/images``, the HierarCaps test images) are written as
GRIT-format grounded shards with argent's own ``ShardWriter``: the image bytes unchanged, the
HierarCaps level-4 caption, and 1–3 boxes per image **drawn at random** (seeded; HierarCaps has no
boxes): each side 10–60 % of the image's, each box's phrase a distinct word of the caption. They are
then read at ``--size`` px by

- argent's ``train_loader`` (augmentation on, as on real data), with the CLIP/MERU sample (one image)
  and the HyCoCLIP/ARGENT sample (image + one box crop from one decode), with ``data.decode_draft``
  off and on;
- the same loader as before its worker batches were written into shared memory (``-prev``, worker
  runs only): the same batches, the DataLoader then copies each float batch there;
- open_clip's own pipeline on the same shards: ``wds.WebDataset(...).decode("pil")``,
  ``open_clip.image_transform(size, is_train=True)`` on the image, open_clip's tokenizer on the
  caption, batched in the pipeline, in a torch ``DataLoader`` (one image per sample). Its
  RandomResizedCrop keeps 90–100 % of the area (argent's: 50–100 %), and it normalises the floats.

argent's tokenizer keeps a row per caption; its cache is emptied before every run, as GRIT's 20 M
captions rarely repeat (open_clip's tokenizer has none).

Every contender runs ``--reps`` times, interleaved (A, B, C, A, B, C, ...), each time in a fresh
loader: ``--warmup`` batches (worker start, shuffle buffer fill) are not timed, then ``--batches``
batches are. Reported per contender and worker count, medians over the repetitions:

- ``samples/s``: wall-clock rate;
- ``per worker``: samples/s ÷ the worker processes (``num_workers``; with 0 the main process does
  the work and counts as one). The main process of a worker run only receives batches and is not
  counted here;
- ``per CPU-s``: samples ÷ the CPU seconds (user + system) of the main process and its workers over
  the timed window: the per-core rate that a shared, loaded machine does not distort.

Then what one GPU needs at the step times of docs/scaling.md §4 (batch 768): samples/s per GPU and
decode cores per GPU at the measured per-CPU-s rate of each family's sample.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import inspect
import io
import itertools
import json
import logging
import math
import os
import platform
import pstats
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import open_clip
import open_clip.tokenizer as open_clip_tokenizer
import open_clip.transform as open_clip_transform
import psutil
import torch
import webdataset as wds
from torch.utils.data import DataLoader
from torchvision import transforms

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from argent.config import DataConfig  # noqa: E402
from argent.data.formats.grounded import select_regions  # noqa: E402
from argent.data.formats.hierarcaps import read_hierarcaps  # noqa: E402
from argent.data.image_cache import augment, crop_pixels, draft_factor, pad_square, to_float  # noqa: E402
from argent.data.images import IMAGE_EXTENSIONS, decode_image, decode_image_draft, image_size_of  # noqa: E402
from argent.data.loaders import TrainStream, train_loader  # noqa: E402
from argent.data.shards import ShardWriter, iter_shard  # noqa: E402
from argent.models.tokenizer import _token_row, tokenize  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO.parent / "shared" / "data" / "hierarcaps" / "images"
CAPTIONS = IMAGES.parent / "hierarcaps_test.csv"
BOX_SIDE = (0.10, 0.60)  # a drawn box's side, as a fraction of the image's side (GRIT-like sizes)
BATCH_768 = 768
# docs/scaling.md §4, GPU-hours table: seconds per step of 768 on one GPU (A100, 35 % MFU, assumed).
STEP_S = {"S": {"clip": 0.32, "argent": 0.63}, "B": {"clip": 0.86, "argent": 1.72}, "L": {"clip": 2.72, "argent": 5.43}}
CONTENDERS = ("argent-clip", "argent-argent", "open_clip", "argent-clip-prev", "argent-argent-prev")
# "-prev": the loader before its worker batches were stacked in shared memory (the DataLoader then copies
# each float batch there): the same batches, measured beside the current loader (worker runs only).


# ---- the shards -----------------------------------------------------------------------------------


def photo_captions(images: Path, captions: Path, n: int) -> list[tuple[Path, str]]:
    """Up to ``n`` (image, caption) pairs: HierarCaps' level-4 caption when the CSV is there, else a fixed one."""
    if captions.is_file():
        pairs = [(s.image_path, s.levels[-1]) for s in read_hierarcaps(captions, images) if s.image_path is not None]
    else:
        files = sorted(p for p in images.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
        pairs = [(p, "a photo of a scene with several objects") for p in files]
    return sorted(pairs)[:n]


def grounded_json(caption: str, width: int, height: int, rng: np.random.Generator) -> dict[str, Any]:
    """The GRIT JSON of one photo: 1–3 seeded random boxes, each phrased by a distinct caption word."""
    words: dict[str, tuple[int, int]] = {}
    for m in re.finditer(r"[A-Za-z]+", caption):
        words.setdefault(m.group().lower(), (m.start(), m.end()))  # a phrase is kept once (HyCoCLIP's rule)
    spans = list(words.values())
    chunks = []
    for i in rng.choice(len(spans), size=min(int(rng.integers(1, 4)), len(spans)), replace=False):
        fw, fh = rng.uniform(*BOX_SIDE, size=2)
        x0, y0 = rng.uniform(0, 1 - fw), rng.uniform(0, 1 - fh)
        chunks.append([*spans[int(i)], round(x0, 4), round(y0, 4), round(x0 + fw, 4), round(y0 + fh, 4), 1.0])
    return {"caption": caption, "width": width, "height": height, "noun_chunks": chunks, "ref_exps": []}


def write_shards(pairs: list[tuple[Path, str]], out: Path, shard_size: int, size: int, seed: int = 0) -> dict[str, Any]:
    """GRIT-format shards of the photos (image bytes unchanged) under ``out``; a summary of what was written,
    with how many photos ``data.decode_draft`` decodes reduced at ``size`` (CLIP and ARGENT samples)."""
    sizes, boxes, reduced = [], 0, {"clip": 0, "argent": 0}
    for s in range(0, len(pairs), shard_size):
        with ShardWriter(out / f"shard-{s // shard_size:06d}.tar") as writer:
            for i, (path, caption) in enumerate(pairs[s:s + shard_size], start=s):
                data = path.read_bytes()
                width, height = image_size_of(data) or (0, 0)
                meta = grounded_json(caption, width, height, np.random.default_rng([seed, i]))
                boxes += len(meta["noun_chunks"])
                kept = [r.box for r in select_regions(caption, meta["noun_chunks"], [], width, height)]
                reduced["clip"] += draft_factor(width, height, [], size, augment=True) > 1
                reduced["argent"] += draft_factor(width, height, kept, size, augment=True) > 1
                sizes.append((width, height))
                writer.write(f"{i:08d}", {"jpg": data, "json": json.dumps(meta).encode("utf-8")})
    shapes = sorted({f"{w}x{h}" for w, h in sizes})
    return {"images": len(pairs), "shards": -(-len(pairs) // shard_size), "boxes": boxes,
            "sizes": shapes if len(shapes) <= 5 else f"{len(shapes)} sizes, {shapes[0]} .. {shapes[-1]}",
            "bytes_per_image": round(sum(p.stat().st_size for p, _ in pairs) / max(1, len(pairs))),
            "draft_reduces": reduced}


# ---- the contenders -------------------------------------------------------------------------------


def _private_stack(images: list[torch.Tensor]) -> torch.Tensor:
    return to_float(torch.stack(images))


def argent_batches(shards: str, family: str, draft: bool, workers: int, batch: int, size: int,
                   prev: bool = False) -> Iterator[int]:
    data_cfg = DataConfig(train_shards=shards, augment=True, decode_draft=draft)
    loader = train_loader(data_cfg, batch_size=batch, image_size=size, context_length=77,
                          use_boxes=family == "argent", seed=0, data_streams=max(1, workers), num_workers=workers,
                          shuffle_buffer=1000)  # a stream per worker: every worker busy
    if not prev:
        return (len(b["key"]) for b in loader)
    with mock.patch.object(TrainStream, "_stack", staticmethod(_private_stack)):
        it = iter(loader)  # the workers fork here and keep the patched class
    return (len(b["key"]) for b in it)


def _caption(meta: dict) -> str:
    return meta["caption"]


def open_clip_batches(shards: str, workers: int, batch: int, size: int) -> Iterator[int]:
    """open_clip's training pipeline (its data.py, reduced to its public parts): decode, transform, tokenize."""
    preprocess = open_clip.image_transform(size, is_train=True)
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    dataset = (wds.WebDataset(shards, shardshuffle=False, empty_check=False)
               .shuffle(1000).decode("pil").to_tuple("jpg", "json")
               .map_tuple(preprocess, lambda meta: tokenizer(_caption(meta))[0]).batched(batch)
               .repeat())  # passes over the shards without end, as argent's loader
    loader = DataLoader(dataset, batch_size=None, num_workers=workers, prefetch_factor=2 if workers else None)
    return (len(images) for images, _ in loader)


def make(contender: str, shards: str, draft: bool, workers: int, batch: int, size: int) -> Iterator[int]:
    if contender == "open_clip":
        return open_clip_batches(shards, workers, batch, size)
    return argent_batches(shards, contender.split("-")[1], draft, workers, batch, size, contender.endswith("-prev"))


def cpu_seconds(proc: psutil.Process) -> float:
    """User + system CPU seconds of this process and its live children (the loader's workers)."""
    total = sum(proc.cpu_times()[:2])
    for child in proc.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def time_once(start: Callable[[], Iterator[int]], warmup: int, batches: int) -> dict[str, float]:
    proc = psutil.Process()
    _token_row.cache_clear()  # forked workers would inherit an earlier run's captions: GRIT's rarely repeat
    it = start()
    for _ in range(warmup):
        next(it)
    main0, cpu0, t0 = sum(proc.cpu_times()[:2]), cpu_seconds(proc), time.perf_counter()
    n = sum(next(it) for _ in range(batches))
    wall, cpu, main = time.perf_counter() - t0, cpu_seconds(proc) - cpu0, sum(proc.cpu_times()[:2]) - main0
    del it  # shuts the workers down
    return {"samples": n, "wall_s": wall, "cpu_s": cpu, "main_cpu_s": main}


def decode_costs(pairs: list[tuple[Path, str]], n: int = 200, rounds: int = 3) -> list[str]:
    """Milliseconds per photo: full decode, and DCT-domain decodes at 1/2, 1/4, 1/8 (best of ``rounds``)."""
    data = [path.read_bytes() for path, _ in pairs[:n]]
    cells = []
    for factor in (1, 2, 4, 8):
        best = math.inf
        for _ in range(rounds):
            t0 = time.perf_counter()
            for d in data:
                np.asarray(decode_image(d, "x") if factor == 1 else decode_image_draft(d, "x", factor)[0])
            best = min(best, (time.perf_counter() - t0) / len(data))
        cells.append(f"{1e3 * best:.3f}")
    return ["| decode to RGB array, ms per photo | full | 1/2 | 1/4 | 1/8 |", "|---|---|---|---|---|",
            f"| {len(data)} photos | " + " | ".join(cells) + " |"]


# ---- report ---------------------------------------------------------------------------------------


def label(contender: str, draft: bool) -> str:
    return contender + (" +draft" if draft and contender != "open_clip" else "")


def summarise(runs: list[dict[str, float]], workers: int) -> dict[str, Any]:
    rate = statistics.median(r["samples"] / r["wall_s"] for r in runs)
    per_cpu = statistics.median(r["samples"] / r["cpu_s"] for r in runs)
    main = statistics.median(r["main_cpu_s"] / r["cpu_s"] for r in runs)
    return {"workers": workers, "samples_per_s": rate, "per_worker": rate / max(1, workers),
            "per_cpu_s": per_cpu, "main_share": main, "runs": runs}


def needs(rows: list[dict[str, Any]]) -> list[str]:
    """What one GPU of docs/scaling.md §4 needs, at each sample's median per-CPU-s rate over the worker
    runs (a training job reads through workers; the in-process run is a reference only)."""
    rates: dict[str, list[float]] = {}
    for r in rows:
        if r["workers"] > 0 or all(q["workers"] == 0 for q in rows):
            rates.setdefault(r["label"], []).append(r["per_cpu_s"])
    best = {name: statistics.median(v) for name, v in rates.items()}
    lines = ["| size | family | s/step (768) | samples/s per GPU | sample measured | samples/CPU-s | decode cores per GPU |",
             "|---|---|---|---|---|---|---|"]
    for size, steps in STEP_S.items():
        for family, step in steps.items():
            need = BATCH_768 / step
            names = [k for k in best if k.startswith(f"argent-{family}")] + (["open_clip"] if family == "clip" else [])
            for name in names:
                lines.append(f"| {size} | {'CLIP/MERU' if family == 'clip' else 'HyCoCLIP/ARGENT'} | {step} | "
                             f"{need:,.0f} | {name} | {best[name]:.0f} | {need / best[name]:.1f} |")
    return lines


# Where a sample's time goes: cumulative seconds of these functions (none calls another of them).
PARTS: dict[str, list[Callable]] = {
    "JPEG decode (open + decode + to array)": [decode_image, decode_image_draft, wds.autodecode.Decoder.decode1],
    "header read while parsing": [image_size_of],
    "pad to square + box crop": [pad_square, crop_pixels],
    "random resized crop (draw + bicubic resize)": [augment, transforms.RandomResizedCrop.forward],
    "to float + stack (+ normalize)": [TrainStream._stack, open_clip_transform.MaybeToTensor.__call__,
                                       transforms.Normalize.forward, wds.filters.default_collation_fn],
    "tokenize": [tokenize, open_clip_tokenizer.SimpleTokenizer.__call__],
    "tar read + record parse": [iter_shard, wds.tariterators.tar_file_expander],
}


def _key(fn: Callable) -> tuple[str, int, str]:
    """The pstats key of a Python function: (file, first line, name)."""
    code = inspect.unwrap(fn).__code__
    return code.co_filename, code.co_firstlineno, code.co_name


def profile(shards: str, contender: str, draft: bool, batch: int, size: int, batches: int) -> None:
    it = make(contender, shards, draft, 0, batch, size)
    next(it)
    prof = cProfile.Profile()
    prof.enable()
    n = sum(next(it) for _ in range(batches))
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = stats.total_tt
    print(f"cProfile, {label(contender, draft)}, in-process (num_workers=0), {n} samples, {total:.2f} s "
          f"({1e3 * total / n:.2f} ms per sample under the profiler):")
    for part, fns in PARTS.items():
        keys = {_key(fn) for fn in fns}
        cum = sum(v[3] for key, v in stats.stats.items() if key in keys)
        if cum:
            print(f"  {part:<46} {cum:6.2f} s  {100 * cum / total:5.1f} %  {1e3 * cum / n:.2f} ms/sample")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images-dir", type=Path, default=IMAGES)
    p.add_argument("--captions", type=Path, default=CAPTIONS, help="hierarcaps_test.csv (else a fixed caption)")
    p.add_argument("--images", type=int, default=1000, help="photos to write into shards")
    p.add_argument("--shard-size", type=int, default=100)
    p.add_argument("--size", type=int, default=224, help="output side S")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--batches", type=int, default=8, help="timed batches per repetition")
    p.add_argument("--warmup", type=int, default=2, help="untimed batches per repetition")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS[:3]))
    p.add_argument("--draft", choices=("off", "on", "both"), default="both", help="data.decode_draft for argent")
    p.add_argument("--profile", choices=("argent", "clip", "open_clip"), help="cProfile one loader instead")
    p.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "loader.json")
    args = p.parse_args(argv)
    if not args.images_dir.is_dir():
        print(f"skipped: {args.images_dir} is absent (the HierarCaps test photos; docs/throughput.md says where "
              "they come from)")
        return 0
    torch.set_num_threads(1)  # as in a DataLoader worker
    logging.getLogger("argent.data").setLevel(logging.ERROR)  # a record whose boxes are all under min_box_area, once per loader
    drafts = {"off": [False], "on": [True], "both": [False, True]}[args.draft]
    with tempfile.TemporaryDirectory(prefix="argent-loader-") as tmp:
        pairs = photo_captions(args.images_dir, args.captions, args.images)
        written = write_shards(pairs, Path(tmp), args.shard_size, args.size)
        shards = f"{tmp}/shard-{{{0:06d}..{written['shards'] - 1:06d}}}.tar"
        print(f"shards: {json.dumps(written)} (boxes drawn at random, seeded: HierarCaps has none)")
        if args.profile:
            contender = {"argent": "argent-argent", "clip": "argent-clip"}.get(args.profile, args.profile)
            for draft in drafts if contender != "open_clip" else [False]:
                profile(shards, contender, draft, args.batch_size, args.size, args.batches)
            return 0
        configs = [(c, d, w) for w in args.workers for c in args.contenders
                   for d in (drafts if c.count("-") == 1 else [False]) if w > 0 or not c.endswith("-prev")]
        runs: dict[tuple, list] = {cfg: [] for cfg in configs}
        load = [os.getloadavg()]
        for _, cfg in itertools.product(range(args.reps), configs):  # interleaved: A, B, C, A, B, C, ...
            c, d, w = cfg
            runs[cfg].append(time_once(functools.partial(make, c, shards, d, w, args.batch_size, args.size), args.warmup, args.batches))
        load.append(os.getloadavg())
    rows = [{"label": label(c, d), "contender": c, "draft": d} | summarise(runs[(c, d, w)], w) for c, d, w in configs]
    print(f"\nS = {args.size}, batch {args.batch_size}, {args.batches} timed batches × {args.reps} reps (median), "
          f"load average {load[0][0]:.2f} before, {load[1][0]:.2f} after\n")
    print("| loader | sample | workers | samples/s | per worker | per CPU-s | main process's CPU share |\n"
          "|---|---|---|---|---|---|---|")
    for r in rows:
        sample = "image + crop" if r["contender"].startswith("argent-argent") else "image"
        print(f"| {r['label']} | {sample} | {r['workers']} | {r['samples_per_s']:.0f} | {r['per_worker']:.0f} | "
              f"{r['per_cpu_s']:.0f} | {100 * r['main_share']:.0f} % |")
    print("\nOne GPU's need at docs/scaling.md §4's step times (batch 768):\n")
    print("\n".join(needs(rows)))
    costs = decode_costs(pairs)
    print("\nJPEG decode alone (one thread):\n\n" + "\n".join(costs))
    result = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor(), "python": platform.python_version(),
                          "torch": torch.__version__, "open_clip": open_clip.__version__},
              "argv": sys.argv[1:], "shards": written, "size": args.size, "batch_size": args.batch_size,
              "load_average": load, "rows": rows, "decode_ms": costs[2]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
