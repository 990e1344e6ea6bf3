"""``argent probe``: parse the command line, then ``run(job)`` (a probe) or ``plot_exposure`` (--figure)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from argent.config import ConfigError, threads
from argent.data.policy import BadDataError
from argent.data.taxonomy import TaxonomyError
from argent.probe.config import ProbeOptions, load_probe_section
from argent.probe.protocol import SPLITS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="argent probe",
        description="Taxonomic-generalisation probe (TaxGen) of a trained run, or (--figure) its exposure plot. "
        "Options come from the probe: section of --config (see docs/probe.md).",
        epilog="probe.options defaults: "
        + ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(ProbeOptions()).items()),
    )
    p.add_argument("--config", type=Path, help="workflow config (e.g. config/config.yaml); its probe: section is read")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a probe key, e.g. --set probe.options.epochs=1 --set probe.data=DIR (repeatable)")
    p.add_argument("--run", type=Path, help="run folder (config.yaml + checkpoint.pt)")
    p.add_argument("--out", type=Path, required=True, help="result JSON (or the PNG with --figure); written atomically")
    p.add_argument("--taxonomy", type=Path, help="'parent child' id edges (default: <probe.data>/taxonomy.txt)")
    p.add_argument("--names", type=Path, nargs="*", default=[], help="extra '<id>\\t<name>' files for hypernym names")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--threads", type=threads, default=0, help="torch CPU threads (0 = torch default)")
    p.add_argument("--policy", choices=("skip", "strict"), default="skip", help="bad images: skip and count, or fail")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--figure", type=Path, nargs="+", help="probe JSONs to plot instead of probing")
    p.add_argument("--split", default="unseen", choices=SPLITS, help="--figure: split to plot (default unseen)")
    p.add_argument("--metric", default="category_mean_macro_f1", choices=("category_mean_macro_f1", "macro_f1"),
                   help="--figure: metric to plot")
    return p


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.figure:
        from argent.probe.figure import plot_exposure  # matplotlib, scipy: after the parse, so --help is instant

        try:
            out = plot_exposure(args.figure, args.out, split=args.split, metric=args.metric)
        except (OSError, ValueError, KeyError) as err:
            print(f"argent probe --figure: {err}", file=sys.stderr)
            return 2
        print(json.dumps({"figure": str(out), "inputs": len(args.figure)}))
        return 0
    if args.run is None:
        print("argent probe: --run is required (or --figure JSON... --out PNG)", file=sys.stderr)
        return 2
    from argent.probe.run import ProbeJob, run  # torch, sklearn: after the parse

    try:
        section = load_probe_section(args.config, args.overrides)
        job = ProbeJob(run_dir=args.run, out=args.out, config=section, taxonomy=args.taxonomy, names=args.names,
                       device=args.device, threads=args.threads, policy=args.policy)
        result = run(job, progress=None if args.quiet else _say)
    except (ConfigError, BadDataError, TaxonomyError, FileNotFoundError, ValueError) as err:
        print(f"argent probe: {err}", file=sys.stderr)
        return 2
    headline = {}
    for cond in result["conditions"]:
        unseen = cond["summary"]["test"].get("unseen")
        if unseen:
            headline[cond["name"]] = round(unseen["category_mean_macro_f1"]["mean"], 3)
    print(json.dumps({"out": str(args.out), "seconds": result["seconds"], "unseen_category_mean_macro_f1": headline}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
