"""`argent tables`: the paper's tables, the claims and mechanism tables, and the figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from argent.cli import EXPECTED_EXIT
from argent.config import load_config


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent tables", description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="workflow config (tables, runs sections)")
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--out", type=Path, default=None, help="tables folder (default <results>/tables)")
    p.add_argument("--figures", type=Path, default=None, help="per-run figures folder (default <results>/figures/runs)")
    p.add_argument("--curves", type=Path, default=None, help="training-curves PNG (default <results>/figures/training_curves.png)")
    p.add_argument("--claims", type=Path, default=None, help="claims file (default: tables.claims.file of the config)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set tables.main.group=main (repeatable)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    args = p.parse_args(argv)
    from argent.tables.run import TablesOptions, run  # polars, scipy, torch: after the parse, so --help is instant

    # a missing file or a typo: one message; merged over config/config.yaml as Snakemake does
    workflow = load_config(args.config, args.overrides, merge_default=not args.no_default)
    opts = TablesOptions(workflow, args.results, args.out, args.figures, args.curves, args.claims)
    try:
        run(opts)
    except (ValueError, FileNotFoundError) as err:
        print(f"argent tables: {err}", file=sys.stderr)
        return EXPECTED_EXIT
    for name in ("main", "claims"):  # the claims table may be left out (its line was printed)
        path = opts.tables_dir / f"{name}.md"
        if path.is_file():
            print(path.read_text())
    return 0
