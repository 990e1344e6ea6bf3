"""Benchmark: throughput and peak memory of chunked retrieval and PEP scoring.

    .venv/bin/python bench/evaluate.py                 # pools 1k, 10k (< 2 min on 1 thread)
    .venv/bin/python bench/evaluate.py --full          # adds the 100k × 100k pool (minutes)
    .venv/bin/python bench/evaluate.py --out results/bench/evaluate.json --threads 2

What it measures, on random unit-norm (CLIP) or hyperboloid (Lorentz) embeddings of width --dim:
- retrieval: ``retrieval_metrics`` over N images × N captions, both directions (2·N² scored
  pairs), with the −Lorentz-distance score in float32 (as ``model.similarity``);
- PEP: ``pair_angles`` + ``pep_metrics`` over N images × (4 own captions + a 100-caption pool),
  float64 angles (N·104 pairs; the pair list is sparse);
- a chunk sweep: peak memory against ``query_chunk`` (retrieval, N = 10k) and
  ``block_entries`` (PEP angles only, N = 2k images × a 1k pool), which should grow linearly
  while the data stays fixed.

Each configuration runs in a fresh subprocess; its peak memory is the process's peak RSS
(``ru_maxrss``) minus its RSS once the inputs exist, so it is the scoring's working memory
(plus, for PEP, the score vector that sklearn needs whole). Subprocesses run with
``MALLOC_MMAP_THRESHOLD_=1048576`` unless ``--no-malloc-tune``: with glibc's dynamic threshold,
freed 32 MiB score blocks are kept in a fragmenting heap and RSS grows with the number of blocks
(measured: 10k 132 MiB, 30k 500 MiB, 100k 575 MiB) although the live memory does not; with the
fixed threshold the peak is flat (30k: 135 MiB) at ≈ 1.5× the time (page faults on every block).
Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_one(spec: dict) -> dict:
    """One measurement in this process (called in a subprocess by ``main``)."""
    import torch

    from argent import geometry
    from argent.evaluation.chunked_similarity import similarity_for
    from argent.evaluation.pep import build_pairs, pair_angles, pep_metrics
    from argent.evaluation.retrieval import retrieval_metrics

    torch.set_num_threads(spec["threads"])
    g = torch.Generator().manual_seed(0)
    n, dim = spec["n"], spec["dim"]

    def points(m: int, dtype=torch.float32) -> torch.Tensor:
        return geometry.exp_map0(torch.randn(m, dim, generator=g, dtype=dtype) * 0.5, 1.0)

    if spec["task"] == "retrieval":
        images = points(n)
        texts = images + 0.3 * points(n)  # noisy copies: recall is neither 0 nor 1
        score = similarity_for("lorentz", 1.0)
        caption_image = torch.arange(n)
        base = _rss_bytes()
        start = time.perf_counter()
        metrics = retrieval_metrics(images, texts, caption_image, score, (5, 10), spec["query_chunk"], spec["key_chunk"])
        seconds = time.perf_counter() - start
        pairs = 2 * n * n
    else:
        pool_size = spec["pool"]
        chains = [(f"{i} a", f"{i} b", f"{i} c", f"{i} d") for i in range(n)]
        pool = [f"pool {j}" for j in range(pool_size)]
        pairs_idx = build_pairs(chains, pool)
        texts = points(len(pairs_idx.texts), torch.float64)
        images = points(n, torch.float64)
        base = _rss_bytes()
        start = time.perf_counter()
        angles = pair_angles(texts, images, pairs_idx, 1.0, spec["block_entries"])
        # The chunk sweep stops here: the metrics hold the whole score vector, which would hide
        # the scoring's block memory.
        metrics = {k: v for k, v in pep_metrics(*angles).items() if k in ("auc", "ap")} if spec["metrics"] else {}
        seconds = time.perf_counter() - start
        pairs = n * (4 + pool_size)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {
        **spec,
        "pairs": pairs,
        "seconds": seconds,
        "pairs_per_s": pairs / seconds,
        "peak_extra_mib": max(0, peak - base) / 2**20,
        "metrics": metrics,
    }


def _spawn(spec: dict, malloc_tune: bool) -> dict:
    env = dict(os.environ)
    if malloc_tune:
        # glibc raises its mmap threshold to the size of the largest freed block (up to 32 MiB,
        # exactly one default score block), after which freed blocks stay in a fragmenting heap and
        # RSS creeps up with the number of blocks (≈ 4× the budget at 100k). A fixed threshold
        # returns every freed block to the OS, so RSS shows the algorithm's working set.
        env["MALLOC_MMAP_THRESHOLD_"] = "1048576"
    out = subprocess.run(
        [sys.executable, __file__, "--one", json.dumps(spec)], capture_output=True, text=True, cwd=ROOT, check=False, env=env
    )
    if out.returncode != 0:
        raise RuntimeError(f"bench run {spec} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_reuse(n_images: int, protocols: int, threads: int) -> dict:
    """Image-embedding reuse: ``protocols`` protocols asking for the same image set (as hs_pep,
    hs_hierarcaps and hs_analysis do), with and without ``reuse_image_embeddings``; tiny model."""
    import tempfile

    import torch
    from PIL import Image

    from argent.config import model_from
    from argent.data.images import eval_transform
    from argent.data.policy import BadDataPolicy
    from argent.evaluation.encoding import encode_images, reuse_image_embeddings
    from argent.models import build_model

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build_model(model_from("tiny"), "lorentz").eval()
    tf = eval_transform(model.config.image_size)
    with tempfile.TemporaryDirectory(prefix="argent-bench-") as tmp:
        paths = []
        for i in range(n_images):
            paths.append(Path(tmp) / f"{i}.png")
            Image.new("RGB", (64, 64), (i % 256, 80, 160)).save(paths[-1])
        t = time.perf_counter()
        for _ in range(protocols):
            plain, _ = encode_images(model, paths, tf, 64, BadDataPolicy("skip"))
        without = time.perf_counter() - t
        t = time.perf_counter()
        with reuse_image_embeddings() as memo:
            for _ in range(protocols):
                reused, _ = encode_images(model, paths, tf, 64, BadDataPolicy("skip"))
        with_reuse = time.perf_counter() - t
    return {"images": n_images, "protocols": protocols, "seconds_without": without, "seconds_with": with_reuse,
            "speedup": without / with_reuse, "reused_requests": memo.hits, "identical": bool(torch.equal(plain, reused))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="add the 100k pool (retrieval 2·10¹⁰ pairs: minutes)")
    p.add_argument("--dim", type=int, default=128, help="embedding width (tiny model: 128; paper: 512)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "evaluate.json")
    p.add_argument(
        "--no-malloc-tune", action="store_true",
        help="measure with glibc's default (dynamic) mmap threshold: heap retention then inflates peak RSS",
    )
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--reuse-only", action="store_true", help="only the image-embedding reuse measurement")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    reuse = bench_reuse(1000, 3, args.threads)
    print(f"image embeddings, {reuse['images']} images asked for by {reuse['protocols']} protocols: "
          f"{reuse['seconds_without']:.2f} s without reuse, {reuse['seconds_with']:.2f} s with "
          f"({reuse['speedup']:.2f}x; identical: {reuse['identical']})")
    if args.reuse_only:
        return 0

    sizes = [1_000, 10_000] + ([100_000] if args.full else [])
    common = {"dim": args.dim, "threads": args.threads}
    specs = []
    for n in sizes:
        specs.append({"task": "retrieval", "n": n, "query_chunk": 1024, "key_chunk": 8192, "sweep": "pool", **common})
        specs.append({"task": "pep", "n": n, "pool": 100, "block_entries": 1 << 22, "metrics": True, "sweep": "pool", **common})
    for qc in (256, 1024, 4096):
        specs.append({"task": "retrieval", "n": 10_000, "query_chunk": qc, "key_chunk": 8192, "sweep": "chunk", **common})
    for be in (1 << 16, 1 << 18, 1 << 20, 1 << 21):
        specs.append({"task": "pep", "n": 2_000, "pool": 1000, "block_entries": be, "metrics": False, "sweep": "chunk", **common})

    rows = []
    header = f"{'task':9} {'sweep':5} {'N':>7} {'chunk':>9} {'pairs':>14} {'seconds':>8} {'pairs/s':>11} {'peak MiB':>9}"
    print(header)
    print("-" * len(header))
    for spec in specs:
        row = _spawn(spec, not args.no_malloc_tune)
        rows.append(row)
        chunk = row.get("query_chunk") or row.get("block_entries")
        print(
            f"{row['task']:9} {row['sweep']:5} {row['n']:>7} {chunk:>9} {row['pairs']:>14,} "
            f"{row['seconds']:>8.2f} {row['pairs_per_s']:>11.3g} {row['peak_extra_mib']:>9.1f}",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text(json.dumps({"settings": {**common, "full": args.full, "malloc_mmap_threshold": None if args.no_malloc_tune else 1048576}, "rows": rows, "image_embedding_reuse": reuse}, indent=2) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
