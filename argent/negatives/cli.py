"""``argent mine``: parse the command line, then ``run(job)`` (argent.negatives.run).

    argent mine SOURCE --out negatives.parquet [--config FILE.yaml] [--set negatives.<key>=<value> ...]
                [--format auto|grounded|hierarcaps|table] [--nltk-data DIR] [--summary PATH] [--limit N]

Files are flags (the workflow rule names them); every option of the mining itself comes from the
``negatives:`` section of ``--config`` (defaults when absent) and ``--set negatives.<key>=<value>``.
Prints a small table of negatives per mode and operator.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from argent.config import ConfigError
from argent.negatives.config import FORMATS, MiningConfig, load_negatives_section
from argent.wordnet import WordNetNotFound


def build_parser() -> argparse.ArgumentParser:
    defaults = ", ".join(f"{k}={v!r}" for k, v in dataclasses.asdict(MiningConfig()).items())
    p = argparse.ArgumentParser(prog="argent mine", description="Mine concreteness-ranked hard negatives for "
                                "one caption set: a parquet (one row per caption and mode at most) and a JSON summary.",
                                epilog=f"negatives: keys and defaults: {defaults}.")
    p.add_argument("source", help="caption source: grounded shard pattern, HierarCaps CSV, or key,caption CSV/parquet")
    p.add_argument("--out", required=True, type=Path, help="output parquet")
    p.add_argument("--config", type=Path, help="workflow config (e.g. config/config.yaml); its negatives: section is read")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a negatives: key, e.g. --set negatives.top_k=1 (value parsed as YAML; repeatable)")
    p.add_argument("--format", default="auto", choices=FORMATS, help="caption source format (default: by name)")
    p.add_argument("--nltk-data", help="folder holding corpora/wordnet.zip (default: negatives.nltk_data, then NLTK_DATA)")
    p.add_argument("--summary", type=Path, help="summary JSON (default: <out without .parquet>.summary.json)")
    p.add_argument("--limit", type=int, default=0, help="mine only the first N captions (0 = all)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from argent.negatives.run import MineJob, run  # torch and polars: after the parse, so --help is instant

    try:
        config = load_negatives_section(args.config, args.overrides)
        if args.nltk_data:
            config = dataclasses.replace(config, nltk_data=args.nltk_data)
        job = MineJob(source=args.source, out=args.out, fmt=args.format, summary=args.summary, limit=args.limit,
                      config=config)
        summary = run(job)
    except (ConfigError, WordNetNotFound, FileNotFoundError, ValueError, RuntimeError) as err:
        print(f"argent mine: error: {err}", file=sys.stderr)
        return 2
    print(f"{summary['captions']} captions ({summary['empty_captions']} empty) in {summary['seconds']:.1f}s -> {args.out}")
    operators = sorted({op for stats in summary["modes"].values() for op in stats["operators"]})
    header = ["mode", "negatives", "no_slot", "no_edit", *operators]
    print("  ".join(f"{h:>12}" for h in header))
    for mode, stats in summary["modes"].items():
        cells = [mode, stats["negatives"], stats["no_slot"], stats["no_edit"], *(stats["operators"].get(op, 0) for op in operators)]
        print("  ".join(f"{c:>12}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
