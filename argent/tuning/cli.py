"""``argent tune``: an Optuna study over a variant's loss weights (docs/tuning.md).

    argent tune --config config/config.yaml [--set tune.n_trials=12 ...] [--study NAME]
                [--out results/tune/<study>] [--no-export | --export-only] [--threads T]
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from argent.config import threads

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent tune", description="Optuna study over a variant's loss weights, "
                                "scored on validation benchmarks only (docs/tuning.md).")
    p.add_argument("--config", type=Path, required=True, help="workflow config with a tune: section")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. tune.n_trials=12 or tune.storage=postgresql://... (repeatable)")
    p.add_argument("--study", default=None, help="study name (default: tune.study); names the storage entry and <out>")
    p.add_argument("--out", type=Path, default=None, help="study folder (default: <results>/tune/<study>)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--export-only", action="store_true", help="only write best.yaml, trials.csv, figures from storage")
    mode.add_argument("--no-export", action="store_true", help="run trials only (parallel workers; export later)")
    p.add_argument("--threads", type=threads, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from argent.tuning.run import TuneRequest, run  # torch and optuna: after the parse, so --help is instant

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    mode = "export" if args.export_only else "trials" if args.no_export else "all"
    return run(TuneRequest(config=args.config, sets=args.sets, study=args.study, out=args.out, mode=mode,
                           threads=args.threads, merge_default=not args.no_default))


if __name__ == "__main__":
    raise SystemExit(main())
