"""``argent check --config FILE``: the preflight (argent/check/__init__.py says what it checks), its findings
printed and, with ``--out``, written as the workflow's marker."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from argent.check.preflight import preflight
from argent.config import load_config
from argent.io import atomic_write_json
from argent.tablespec.claims import check_claims


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent check", description="fail fast: validate the config, data paths, a few records, device, disk")
    p.add_argument("--config", type=Path, required=True, help="workflow config (e.g. config/config.yaml)")
    p.add_argument("--base-dir", type=Path, default=Path.cwd(), help="relative paths are taken from here (default: cwd)")
    p.add_argument("--min-free-gb", type=float, default=1.0, help="least free disk space under results/ (GiB)")
    p.add_argument("--out", type=Path, default=None, help="write the findings as JSON here (the workflow's marker)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    args = p.parse_args(argv)
    # merged over config/config.yaml as Snakemake's --configfile does (the workflow's own merged file is a fixpoint)
    workflow = load_config(args.config, base_dir=args.base_dir, merge_default=not args.no_default)
    workflow.check_all()  # every section, typed by its dataclass (argent.config.SECTIONS)
    claims = check_claims(workflow, args.base_dir)  # the claims file and its role map, as the tables job reads them
    findings = preflight(workflow.raw, args.base_dir, args.min_free_gb, claims)
    for f in findings:
        if f.status == "missing-optional":
            print(f"skipped (optional, data absent): {f.key}: {f.path}", file=sys.stderr)
        elif f.status == "counted":
            print(f"warning (bad_data: skip, training counts it): {f.key}: {f.detail}", file=sys.stderr)
    ok = sum(f.status == "ok" for f in findings)
    print(f"argent check: {args.config}: ok ({ok} paths present, "
          f"{sum(f.status == 'produced' for f in findings)} made by the workflow, "
          f"{sum(f.status == 'missing-optional' for f in findings)} optional absent)")
    if args.out:
        atomic_write_json(args.out, [f.__dict__ for f in findings])
    return 0
