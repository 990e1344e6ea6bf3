"""Benchmark ``argent clean`` with the offline text embedder (default: the real 1,000-row HierarCaps).

Prints a table and writes JSON (default results/bench/clean.json). Times the whole run (model load,
embedding, scores, pool, Table 1, writing) at the given torch thread count, ``--repeat`` times.

    .venv/bin/python bench/clean.py --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "hierarcaps"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", type=Path, default=SHARED / "hierarcaps_test.csv")
    p.add_argument("--images", type=Path, default=SHARED / "images")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "clean.json")
    args = p.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    torch.set_num_threads(args.threads)
    from argent.cleaning.config import CleanSection
    from argent.cleaning.run import CleanJob, run

    rows = []
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            summary = run(CleanJob(csv=args.csv, images=args.images, out_dir=Path(tmp),
                                   config=CleanSection(scorer="text")))
            wall = time.perf_counter() - t0
        rows.append({"repeat": rep, "threads": args.threads, "samples": summary["counts"]["samples"],
                     "kept": summary["counts"]["kept"], "seconds": round(wall, 2),
                     "load_average_1min": round(os.getloadavg()[0], 2)})
    print(f"{'rep':>3} {'threads':>7} {'samples':>7} {'kept':>5} {'seconds':>8} {'load':>5}")
    for r in rows:
        print(f"{r['repeat']:>3} {r['threads']:>7} {r['samples']:>7} {r['kept']:>5} {r['seconds']:>8} "
              f"{r['load_average_1min']:>5}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"bench": "clean", "csv": str(args.csv), "runs": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
