"""Every check of ``argent check`` (argent/check/__init__.py), and the one refusal that lists every problem."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from argent.check.data import benchmark_data, training_data
from argent.check.runs import claim_run_problems, device_problems, objective_problems, run_problems
from argent.config import ConfigError, WorkflowConfig, check_sections, load_variants, setting
from argent.io import ArgentError
from argent.plan.groups import Plan, build_plan
from argent.plan.inputs import declared_hash_refusals, results_problem
from argent.plan.preflight import Finding, missing_required, produced_prefixes
from argent.tablespec.claims import ClaimsSpec


class PreflightError(ArgentError):
    """Something the config enables cannot run; the message lists every problem found."""


def preflight(cfg: dict[str, Any], base_dir: Path, min_free_gb: float = 1.0,
              claims: ClaimsSpec | None = None) -> list[Finding]:
    """Every check; raises ``PreflightError`` listing every problem, else returns the findings."""
    check_sections(cfg)
    workflow = WorkflowConfig(cfg, "config", base_dir)
    prefixes = produced_prefixes(workflow)
    plan, problems = _plan_problems(workflow, base_dir, prefixes)
    findings, found = training_data(cfg, plan.configs if plan else {}, prefixes)
    problems += found
    benchmarks, found = benchmark_data(cfg, prefixes, base_dir)
    findings += benchmarks
    problems += found
    if plan is not None and claims is not None:
        catalogue = set(load_variants(base_dir / str(setting(cfg, "variants_file"))))
        problems += claim_run_problems(claims, catalogue, "tables.claims.file")
    problems += _disk_problems(cfg, base_dir, min_free_gb)
    message = missing_required(findings)
    if message:
        problems.append(message)
    if problems:
        raise PreflightError("preflight found problems:\n  " + "\n  ".join(problems))
    return findings


def _plan_problems(workflow: WorkflowConfig, base_dir: Path, prefixes: list[str]) -> tuple[Plan | None, list[str]]:
    """(the plan, or None when the groups cannot run, and the problems of the results folder, of each run as its
    job would start it, of the devices every job asks for and of the study's objective)."""
    cfg = workflow.raw  # the checks of argent/check read the mapping
    problems: list[str] = []
    devices: dict[str, str] = {}  # device -> the key that asks for it
    results_folder = Path(str(setting(cfg, "results")))
    unusable = results_problem(results_folder if results_folder.is_absolute() else base_dir / results_folder)
    if unusable:
        problems.append(unusable)
    try:
        plan = build_plan(workflow, base_dir)  # the experiment groups; a group that cannot run is an error here
    except ConfigError as err:
        plan = None
        problems.append(f"groups: {err}")
    if plan is not None:
        problems += run_problems(cfg, plan, base_dir, prefixes, devices)
        problems += declared_hash_refusals(plan, base_dir)  # data built as another dataset_hash than declared
    if setting(cfg, "clean", "datasets"):  # the cleaning jobs run on clean.device
        devices.setdefault(setting(cfg, "clean", "device"), "clean.device")
    problems += device_problems(devices)
    problems += objective_problems(workflow, base_dir)
    return plan, problems


def _disk_problems(cfg: dict[str, Any], base_dir: Path, min_free_gb: float) -> list[str]:
    results = base_dir / setting(cfg, "results")
    probe = results if results.is_dir() else base_dir
    free_gb = shutil.disk_usage(probe).free / 2**30
    if free_gb < min_free_gb:
        return [f"results: {results}: only {free_gb:.1f} GiB free (at least {min_free_gb:g} GiB wanted); "
                f"free space or point results elsewhere"]
    return []
