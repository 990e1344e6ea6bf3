"""`argent restamp (--run DIR | --results DIR) [--config FILE] [--set key=value ...]`: carry finished
runs over a change of the run identity's encoding, without retraining.

What is checked and rewritten, and what is refused: argent/restamp/__init__.py; one folder: ``stamp.restamp_run``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from argent.config import WorkflowConfig, setting
from argent.io import ArgentError
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.restamp.stamp import restamp_run
from argent.runs import RUNS_DIR, HiershapesFolder, RunFolder


def run_folders(results: Path) -> list[Path]:
    return sorted(p.parent for p in (results / RUNS_DIR).glob("*/*/seed*/config.yaml"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent restamp", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--run", type=Path, help="one run folder: <results>/runs/<group>/<variant>-<size>/seed<k>")
    where.add_argument("--results", type=Path, help="every run folder under <results>/runs")
    p.add_argument("--config", type=Path, default=Path("config") / "config.yaml",
                   help="the workflow config the workflow now trains with (merged over config/config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, as given to snakemake --config (repeatable)")
    p.add_argument("--base-dir", type=Path, default=Path.cwd(), help="project root (relative paths; default: cwd)")
    p.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    args = p.parse_args(argv)
    cfg = merged_config(args.config, args.overrides, args.base_dir)
    plan = build_plan(WorkflowConfig(cfg, "", args.base_dir), args.base_dir)
    folders = [args.run] if args.run else run_folders(args.results)
    if not folders:
        raise ArgentError(f"{args.results / RUNS_DIR}: no run folder (runs/<group>/<variant>-<size>/seed<k>/config.yaml)")
    outcomes = [restamp_run(folder, cfg, plan, args.base_dir, args.dry_run) for folder in folders]
    for outcome in outcomes:
        print(f"argent restamp: {outcome.message}", file=sys.stderr if outcome.status == "refused" else sys.stdout)
    done = [o for o in outcomes if o.status == "restamped"]
    if done and not args.dry_run:
        records = [str(RunFolder(o.run).summary) for o in done if RunFolder(o.run).summary.is_file()]
        manifest = HiershapesFolder(Path(str(setting(cfg, "hiershapes", "out")))).manifest
        if manifest.is_file():  # synth's record names the results folder's params file of before 351ef08
            records.append(str(manifest))
        print("argent restamp: Snakemake still records the old hash as these train jobs' `hash` param (and the "
              "embedded data set's synth job its params of before identity v2); drop those records (nothing is "
              f"deleted but them): snakemake --cleanup-metadata {' '.join(records)}")
    refused = [o for o in outcomes if o.status == "refused"]
    if refused:
        rest = "; the others are done" if len(refused) < len(outcomes) else ""
        raise ArgentError(f"{len(refused)} of {len(outcomes)} run folder(s) not re-stamped (reasons above){rest}")
    return 0
