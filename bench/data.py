"""Data throughput: hiershapes generation (scenes/s) and the training loader (samples/s).

    python bench/data.py                      # generation with 1 and 2 jobs, loader with 0 and 2 workers
    python bench/data.py --full               # also time the default data set (20,000 train scenes, 2 jobs)
    python bench/data.py --out results/bench/data.json

Generation counts train scenes (image + grounded JSON + shard write). The loader rate counts
samples per second (each sample is a decoded image plus a crop, both RandomResizedCrop'ed, and
tokenised caption and phrase), after one warm-up batch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from argent.config import DataConfig  # noqa: E402
from argent.data.hiershapes.generate import HiershapesParams, generate  # noqa: E402
from argent.data.loaders import train_loader  # noqa: E402


def bench_generation(root: Path, scenes: int, jobs: int) -> dict:
    params = HiershapesParams(train_scenes=scenes, val_scenes=0, test_scenes=0, per_class=0, shard_size=250)
    out = root / f"gen-{jobs}"
    start = time.perf_counter()
    manifest = generate(params, out, jobs=jobs)
    seconds = time.perf_counter() - start
    shutil.rmtree(out)
    return {"what": "generate train split", "jobs": jobs, "scenes": scenes, "seconds": seconds,
            "rate": scenes / seconds, "unit": "scenes/s", "hash": manifest["content_hash"][:12]}


def bench_full(root: Path, jobs: int) -> dict:
    params = HiershapesParams()  # the defaults: 20,000 train, 1,000 val, 1,000 test, 20 per class
    start = time.perf_counter()
    manifest = generate(params, root / "full", jobs=jobs)
    seconds = time.perf_counter() - start
    counts = manifest["counts"]
    images = counts["train"] + counts["val"] + counts["classification"] + counts["test"]
    return {"what": "generate default data set", "jobs": jobs, "scenes": images, "seconds": seconds,
            "rate": images / seconds, "unit": "scenes/s", "hash": manifest["content_hash"][:12],
            "train_dir": str(root / "full" / "train")}


def bench_loader(shards: str, workers: int, batches: int, batch_size: int, image_size: int) -> dict:
    data_cfg = DataConfig(train_shards=shards, min_box_area=round(1024 * (64 / 224) ** 2), augment=True)
    loader = train_loader(data_cfg, batch_size=batch_size, image_size=image_size, context_length=32, use_boxes=True,
                          seed=0, data_streams=max(1, workers), num_workers=workers, shuffle_buffer=1000)
    it = iter(loader)
    next(it)  # warm-up: worker start, shuffle buffer fill
    start = time.perf_counter()
    n = sum(len(next(it)["key"]) for _ in range(batches))
    seconds = time.perf_counter() - start
    return {"what": "train loader (image+crop)", "jobs": workers, "scenes": n, "seconds": seconds,
            "rate": n / seconds, "unit": "samples/s"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/data.json"))
    parser.add_argument("--scenes", type=int, default=2000, help="train scenes per generation run")
    parser.add_argument("--full", action="store_true", help="also generate the default data set (20,000 train)")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=64)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="argent-bench-") as tmp:
        root = Path(tmp)
        for jobs in (1, 2):
            rows.append(bench_generation(root, args.scenes, jobs))
        if args.full:
            rows.append(bench_full(root, jobs=2))
            shards = rows[-1].pop("train_dir") + "/shard-*.tar"
        else:
            params = HiershapesParams(train_scenes=4000, val_scenes=0, test_scenes=0, per_class=0, shard_size=500)
            generate(params, root / "loader", jobs=2)
            shards = str(root / "loader" / "train" / "shard-*.tar")
        for workers in (0, 2):
            rows.append(bench_loader(shards, workers, args.batches, args.batch_size, args.image_size))
    print(f"{'what':<28} {'jobs/workers':>12} {'n':>7} {'seconds':>8} {'rate':>10}  unit")
    for r in rows:
        print(f"{r['what']:<28} {r['jobs']:>12} {r['scenes']:>7} {r['seconds']:>8.2f} {r['rate']:>10.1f}  {r['unit']}")
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__},
              "batch_size": args.batch_size, "image_size": args.image_size, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_name(f".{args.out.name}.tmp")
    tmp_out.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp_out, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
