"""`argent plan --config FILE [--set key=value ...]`: per experiment group, the runs the workflow
would train, their steps, GPUs per run and estimated GPU-hours (CPU core-hours on CPU), and the
total; nothing is trained. A config other than the default is merged over config/config.yaml, as
Snakemake's ``--configfile`` does.

`argent plan --record-from RESULTS` writes the measured step-time record (RESULTS/bench/step_times.json)
from the finished training jobs of a results folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from argent.config import WorkflowConfig, load_config
from argent.plan.cost import group_costs
from argent.plan.cost_report import summary_line, table
from argent.plan.data_paths import unseen_paths
from argent.plan.groups import Plan, build_plan, left_out_lines
from argent.plan.step_record import RECORD, record_from_runs


def merged_workflow(config: Path, overrides: list[str], base_dir: Path, merge_default: bool = True) -> WorkflowConfig:
    """The merged workflow config as the Snakefile sees it (the default, the file, the overrides), typed."""
    return load_config(config if config.is_absolute() else base_dir / config, overrides, base_dir=base_dir,
                       merge_default=merge_default)


def merged_config(config: Path, overrides: list[str], base_dir: Path, merge_default: bool = True) -> dict[str, Any]:
    """``merged_workflow``'s mapping, as Snakemake holds it (what ``build_dag`` and a run's identity read)."""
    return merged_workflow(config, overrides, base_dir, merge_default).raw


def run(workflow: WorkflowConfig, base_dir: Path, out: Any = None) -> str:
    out = out or sys.stdout
    plan = build_plan(workflow, base_dir, without_data=True)  # a cost needs no data; the DAG build still refuses
    costs = group_costs(workflow, plan, base_dir)
    for line in left_out_lines(plan):
        print(line, file=out)
    absent = unseen_paths(workflow, plan, base_dir)
    if plan.unseen or absent:
        print(unseen_line(plan, absent), file=out)
    print(table(costs), file=out)
    line = summary_line(costs, plan)
    print(line, file=out)
    return line


def unseen_line(plan: Plan, paths: list[tuple[str, str]] = ()) -> str:
    """The data the plan needs and this machine does not have: the groups that would be left out, then
    every data path not found here (argent/plan/data_paths.py), one per line."""
    lines = ["argent plan: costed as if present, data not seen here (the workflow stops without it):"]
    lines += [f"  groups.{group}: {why}" for group, why in plan.unseen]
    lines += [f"  {key}: {path}" for key, path in paths]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent plan", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, help="workflow config (e.g. config/paper.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set cost.step_seconds.S=0.35 (repeatable)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    p.add_argument("--base-dir", type=Path, default=Path.cwd(), help="project root (relative paths; default: cwd)")
    p.add_argument("--record-from", type=Path, default=None, metavar="RESULTS",
                   help="write RESULTS/bench/step_times.json from RESULTS' finished training jobs")
    args = p.parse_args(argv)
    if args.record_from is not None:
        out = args.record_from / RECORD
        record = record_from_runs(args.record_from, out)
        print(f"argent plan: wrote {out}: " + ", ".join(
            f"{s}: {v['step_seconds']:.4g} s/step at batch {v['batch_size']} on {v['device']} ({v['jobs']} jobs)"
            for s, v in record["sizes"].items()) + f"; machine {record['machine']}")
        return 0
    if args.config is None:  # a usage error, as argparse gives one: the verb's name once, the usage, exit 2
        p.error("--config FILE is required (or --record-from RESULTS)")
    run(merged_workflow(args.config, args.overrides, args.base_dir, not args.no_default), args.base_dir)
    return 0
