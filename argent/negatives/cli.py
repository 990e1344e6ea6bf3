"""``argent mine``: mine concreteness-ranked hard negatives for one caption set.

    argent mine SOURCE --out negatives.parquet [--format auto|grounded|hierarcaps|table]
                [--modes concrete abstract random] [--seed 0] [--nltk-data DIR] [--config FILE.yaml]
                [--set key=value ...] [--summary PATH] [--limit N]

Writes the parquet (contract schema, one row per (key, mode) at most) and a JSON summary (counts per
mode and operator, failures, rejections, the config), both atomically, and prints a small table.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

from argent.config import ConfigError, deep_merge, load_yaml, parse_override
from argent.negatives.config import MODES, MiningConfig, mining_config
from argent.negatives.io import FORMATS, iter_source, write_json, write_parquet
from argent.negatives.wordnet import WordNetNotFound


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent mine", description=__doc__.split("\n\n")[0])
    p.add_argument("source", help="caption source: grounded shard pattern, HierarCaps CSV, or key,caption CSV/parquet")
    p.add_argument("--out", required=True, type=Path, help="output parquet")
    p.add_argument("--format", default="auto", choices=FORMATS)
    p.add_argument("--modes", nargs="+", choices=MODES, help="slot-choice modes (default: the config's, all three)")
    p.add_argument("--seed", type=int, help="seed (default: the config's, 0)")
    p.add_argument("--nltk-data", help="folder holding corpora/wordnet.zip (default: NLTK_DATA)")
    p.add_argument("--config", type=Path, help="YAML file; its `negatives` mapping (or the whole file) sets MiningConfig")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one MiningConfig field, e.g. --set top_k=1 (value parsed as YAML)")
    p.add_argument("--summary", type=Path, help="summary JSON (default: <out without .parquet>.summary.json)")
    p.add_argument("--limit", type=int, default=0, help="mine only the first N captions (0 = all)")
    return p


def resolve_config(args: argparse.Namespace) -> MiningConfig:
    data: dict = {}
    if args.config:
        raw = load_yaml(args.config)
        data = raw.get("negatives", raw)
        if not isinstance(data, dict):
            raise ConfigError(f"{args.config}: `negatives` must be a mapping")
    for text in args.set:
        data = deep_merge(data, parse_override(text))
    if args.modes:
        data["modes"] = list(args.modes)
    if args.seed is not None:
        data["seed"] = args.seed
    if args.nltk_data:
        data["nltk_data"] = args.nltk_data
    return mining_config(data)


def summary_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".parquet") + ".summary.json")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = resolve_config(args)
        from argent.negatives.generator import NegativeGenerator

        generator = NegativeGenerator(config)
        rows = iter_source(args.source, args.format)
        if args.limit:
            rows = itertools.islice(rows, args.limit)
        start = time.perf_counter()
        table, summary = generator.mine(rows)
        seconds = time.perf_counter() - start
    except (ConfigError, WordNetNotFound, FileNotFoundError, ValueError, RuntimeError) as err:
        print(f"argent mine: error: {err}", file=sys.stderr)
        return 2
    summary["source"] = args.source
    summary["seconds"] = round(seconds, 3)
    write_parquet(table, args.out)
    write_json(summary, args.summary or summary_path(args.out))
    print(f"{summary['captions']} captions ({summary['empty_captions']} empty) in {seconds:.1f}s -> {args.out}")
    operators = sorted({op for stats in summary["modes"].values() for op in stats["operators"]})
    header = ["mode", "negatives", "no_slot", "no_edit", *operators]
    print("  ".join(f"{h:>12}" for h in header))
    for mode, stats in summary["modes"].items():
        cells = [mode, stats["negatives"], stats["no_slot"], stats["no_edit"], *(stats["operators"].get(op, 0) for op in operators)]
        print("  ".join(f"{c:>12}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
