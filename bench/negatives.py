"""Benchmark: captions per second of the hard-negative generator, per slot-choice mode.

    .venv/bin/python bench/negatives.py                          # N = 1000 HierarCaps captions
    .venv/bin/python bench/negatives.py --n 5000 --nltk-data DIR --out results/bench/negatives.json

Captions: the level-4 HierarCaps test captions (``--hierarcaps``, default ../shared/data), repeated
with fresh keys up to N (so with N > 1000 the "cold" pass is partly warm). WordNet: ``--nltk-data``, else NLTK_DATA, else the shared wordnet.zip staged
in a temporary folder. Measured, single process:
- ``load``: WordNet + norms + tagger set-up, seconds;
- ``cold``: the first pass over the N captions in all modes (every WordNet lookup is a cache miss);
- ``parse``: tagging + chunking alone, warm caches;
- one row per mode: ``mine`` in that mode alone, warm caches (what a long mining run sees).
Prints a table and writes JSON (captions/s and the counts of negatives made).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from argent.negatives.config import MODES, MiningConfig  # noqa: E402
from argent.negatives.generator import NegativeGenerator  # noqa: E402
from argent.negatives.io import iter_hierarcaps, write_json  # noqa: E402
from argent.wordnet import load_wordnet, stage_wordnet, wordnet_folder  # noqa: E402


def captions(path: Path, n: int) -> list[tuple[str, str]]:
    base = list(iter_hierarcaps(path))
    return [(f"{key}#{i // len(base)}", caption) for i, (key, caption) in
            ((i, base[i % len(base)]) for i in range(n))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000, help="captions per measurement (> 1000 repeats captions)")
    p.add_argument("--hierarcaps", type=Path, default=SHARED / "hierarcaps" / "hierarcaps_test.csv")
    p.add_argument("--nltk-data", help="folder holding corpora/wordnet.zip")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "negatives.json")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.nltk_data or wordnet_folder(None)
        if folder is None:
            folder = stage_wordnet(SHARED / "wordnet" / "wordnet.zip", tmp)
        start = time.perf_counter()
        wordnet = load_wordnet(folder)
        generator = NegativeGenerator(MiningConfig(), wordnet=wordnet)
        load_s = time.perf_counter() - start

        rows = captions(args.hierarcaps, args.n)
        results: list[dict] = []

        def measure(name: str, fn) -> None:
            start = time.perf_counter()
            made = fn()
            seconds = time.perf_counter() - start
            results.append({"measure": name, "captions": len(rows), "seconds": round(seconds, 3),
                            "captions_per_s": round(len(rows) / seconds, 1), "negatives": made})  # None: parse only

        measure("cold (all modes)", lambda: generator.mine(rows)[0].height)
        measure("parse", lambda: sum(len(generator.parse(c).tokens) for _, c in rows) and None)
        for mode in MODES:
            measure(mode, lambda mode=mode: generator.mine(rows, modes=[mode])[0].height)

    print(f"load (WordNet + norms): {load_s:.2f}s; N = {args.n} captions")
    print(f"{'measure':>18} {'seconds':>9} {'captions/s':>11} {'negatives':>10}")
    for r in results:
        made = "-" if r["negatives"] is None else r["negatives"]
        print(f"{r['measure']:>18} {r['seconds']:>9.2f} {r['captions_per_s']:>11.1f} {made:>10}")
    report = {"bench": "negatives", "n": args.n, "load_seconds": round(load_s, 3), "results": results,
              "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
              "source": str(args.hierarcaps)}
    write_json(report, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
