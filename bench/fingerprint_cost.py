"""What the content check of a run's inputs costs (argent/runs/fingerprint.py; docs/reliability.md §17).

    python bench/fingerprint_cost.py                      # the default data (data/hiershapes/train)
    python bench/fingerprint_cost.py --paper 20000 --record-sample 1000   # + a paper-size shard list

1. The default: the train job's record of its 20 shards (full SHA-256: each is under 32 MiB), and the
   check of that record by a resume or the DAG build (a ``stat`` per file).
2. A paper-size shard list: ``--paper`` sparse files of ``--size-gib`` GiB each (20,000 × 0.5 GiB = 10 TiB
   as listed, nothing on disk: ``truncate``) under a temporary folder. Timed: the DAG build's check of an
   unchanged list (``stat`` only), of a list whose every file got a new time (a copy without ``cp -a``: at
   most ``PLAN_REHASH`` = 64 files re-read, 1 MiB each), and a train job's fresh record (1 MiB sampled per
   file) on ``--record-sample`` of the files, scaled to the whole list. Bytes read are counted, not guessed:
   the sampled digest reads ``BLOCKS`` × ``BLOCK`` per file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from argent.data.inputs import read_inputs, run_input_files
from argent.runs import fingerprint as fp

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn):
    fp._cached_digest.cache_clear()
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def default_data(pattern: str) -> dict:
    files = run_input_files(pattern, "", "none")
    record, fresh = _timed(lambda: read_inputs(files))
    recorded = fp.read_record(record["train_shards"])
    change, check = _timed(lambda: fp.compare(recorded, files["train_shards"], fp.PLAN_REHASH))
    assert change is None
    size = sum(v[0] for v in record["train_shards"].values())
    return {"files": len(files["train_shards"]), "bytes": size, "record_s": round(fresh, 4),
            "check_s": round(check, 5), "read_on_record": size, "read_on_check": 0}


def paper_list(n: int, size_gib: float, sample: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="argent-paper-shards-"))
    try:
        size = int(size_gib * 2**30)
        files = []
        for i in range(n):  # sparse: a size, no blocks
            path = folder / f"shard-{i:06d}.tar"
            with open(path, "wb") as f:
                f.truncate(size)
            files.append(path)
        head = files[:sample]
        part, record_s = _timed(lambda: fp.record(head))
        per_file = record_s / len(head)
        recorded = {name: fp.Fingerprint(*v) for name, v in part.items()}
        # the whole list's record, as the train job wrote it (the sampled digests are all equal: zeros)
        digest = next(iter(recorded.values())).digest
        whole = {p.name: fp.Fingerprint(size, p.stat().st_mtime_ns, digest) for p in files}
        change, unchanged_s = _timed(lambda: fp.compare(whole, files, fp.PLAN_REHASH))
        assert change is None
        for p in files:
            os.utime(p, ns=(1, 1))  # a copy without -a: every time new, every byte the same
        change, touched_s = _timed(lambda: fp.compare(whole, files, fp.PLAN_REHASH))
        assert change is None
        sampled = fp.BLOCKS * fp.BLOCK
        return {"files": n, "listed_bytes": n * size, "listed_tib": round(n * size / 2**40, 2),
                "dag_check_unchanged_s": round(unchanged_s, 3), "dag_read_unchanged": 0,
                "dag_check_all_touched_s": round(touched_s, 3), "dag_read_all_touched": fp.PLAN_REHASH * sampled,
                "record_per_file_s": round(per_file, 5), "record_whole_list_s": round(per_file * n, 1),
                "record_read_whole_list": n * sampled, "record_sample_files": len(head)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", default=str(ROOT / "data" / "hiershapes" / "train" / "shard-*.tar"))
    p.add_argument("--paper", type=int, default=0, help="files of the synthetic paper-size list (0: skip)")
    p.add_argument("--size-gib", type=float, default=0.5, help="apparent size of each (sparse) file, GiB")
    p.add_argument("--record-sample", type=int, default=1000, help="files the fresh record is timed on")
    args = p.parse_args(argv)
    out = {"default": default_data(args.shards)}
    if args.paper:
        out["paper"] = paper_list(args.paper, args.size_gib, min(args.record_sample, args.paper))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
