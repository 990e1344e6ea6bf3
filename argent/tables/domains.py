"""Which data a run was trained on and which data a benchmark reads: synthetic (the embedded
hiershapes, generated under ``hiershapes.out``) or real. A real-data benchmark under a model trained
on synthetic scenes (or the reverse) says nothing about the claim: the claims table prints it as
*out of domain*, without a test (argent/tables/claims.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from argent.config import WorkflowConfig
from argent.evaluation.benchmarks import IMAGES, ITEMS, SHARDS, entry_paths
from argent.plan.groups import Plan
from argent.runs import is_under

SYNTHETIC, REAL = "synthetic", "real"


def _domain(paths: list[str], synthetic_root: Path) -> str:
    return SYNTHETIC if paths and all(is_under(p, synthetic_root) for p in paths) else REAL


def training_domain(group_config: WorkflowConfig, base_dir: Path) -> str:
    """synthetic when the training shards of a group's config lie under ``hiershapes.out``, else real."""
    root = base_dir / str(group_config.hiershapes.out)
    shards = str(group_config.data.train_shards)
    return _domain([str(base_dir / shards)] if shards else [], root)


def benchmark_domain(workflow: WorkflowConfig, benchmark: str, base_dir: Path) -> str:
    """synthetic when every data path of the benchmark entry lies under ``hiershapes.out``, else real (the
    paths as written, relative to ``base_dir``: the typed entries hold them absolute)."""
    entry = workflow.written("benchmarks").get(benchmark) or {}
    root = base_dir / str(workflow.hiershapes.out)
    return _domain([str(base_dir / p) for p in entry_paths(entry, (ITEMS, IMAGES, SHARDS)).values()], root)


def domain_check(workflow: WorkflowConfig, plan: Plan, base_dir: Path) -> Callable[[str, str, str], str]:
    """(qualified A, qualified B, benchmark) -> why the benchmark is out of the runs' domain, or ""."""
    def check(a: str, b: str, benchmark: str) -> str:
        bench = benchmark_domain(workflow, benchmark, base_dir)
        for qualified in (a, b):
            group = qualified.partition("/")[0]
            if group not in plan.configs:
                continue
            trained = training_domain(plan.workflow(group), base_dir)
            if trained != bench:
                return f"{benchmark} is {bench} data; {qualified} was trained on {trained} data"
        return ""
    return check
