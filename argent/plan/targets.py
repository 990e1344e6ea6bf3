"""What the workflow builds, decided from the config and the plan: which benchmarks run, what they
read that the DAG makes, which parquet of hard negatives is mined from which shards, which runs the
probe reads. Pure functions, torch-free, tested with their messages (tests/test_plan_targets.py);
workflow/rules/common.smk only turns their answers into Snakemake inputs and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import ConfigError, check_name
from argent.evaluation.benchmarks import CLEANED, CLEANED_SIDE, entry_paths, parse_benchmark
from argent.layout import probe_result
from argent.plan.groups import Plan, RunKey, uses_negatives
from argent.plan.preflight import benchmark_findings, missing_required, produced_prefixes
from argent.workflow_config import setting

__all__ = ["BenchmarkChoice", "benchmark_data_inputs", "choose_benchmarks", "mining_jobs", "probe_runs"]


@dataclass(frozen=True)
class BenchmarkChoice:
    """``evaluate.benchmarks`` split into those that run and the optional ones whose data is absent
    (``skipped``, each with its one line to print)."""

    run: list[str]
    skipped: dict[str, str] = field(default_factory=dict)


def choose_benchmarks(cfg: dict[str, Any], base_dir: Path) -> BenchmarkChoice:
    """A benchmark runs when its entry is valid (the protocol registry, argent/evaluation/benchmarks.py)
    and its data is made by this DAG or present on disk. Absent data is an error
    naming the key and path (a required benchmark, the default) or one skip line (``optional: true``)."""
    names = [check_name(b, "evaluate.benchmarks") for b in (cfg.get("evaluate") or {}).get("benchmarks") or []]
    entries = cfg.get("benchmarks") or {}
    unknown = [b for b in names if b not in entries]
    if unknown:
        raise ConfigError(f"evaluate.benchmarks: {unknown} not defined under benchmarks: (defined: {sorted(entries)})")
    for name, raw in entries.items():  # every entry (tuning reads some), before any job runs
        parse_benchmark(name, raw, base_dir)
    run, skipped = [], {}
    prefixes = produced_prefixes(cfg)
    for name in names:
        findings = benchmark_findings(name, entries[name], prefixes, base_dir)
        problem = missing_required(findings)
        if problem:
            raise ConfigError(f"required benchmark data missing:\n  {problem}")
        absent = [f for f in findings if f.status == "missing-optional"]
        if absent:
            skipped[name] = f"skipping optional benchmark {name}: {absent[0].key}: {absent[0].path} not found"
        else:
            run.append(name)
    return BenchmarkChoice(run, skipped)


def benchmark_data_inputs(cfg: dict[str, Any], names: list[str], made_by_synth: str, manifest: str) -> list[str]:
    """Files this DAG makes that the benchmarks ``names`` read: the embedded benchmark's manifest
    (for a path under ``made_by_synth``) and cleaned CSVs / negative pools under the results folder."""
    results = str(Path(cfg.get("results", "results")))
    inputs = set()
    for name in names:
        entry = (cfg.get("benchmarks") or {}).get(name) or {}  # an unknown name is choose_benchmarks' error
        if any(p.startswith(made_by_synth) for p in entry_paths(entry).values()):
            inputs.add(manifest)
        inputs.update(p for p in entry_paths(entry, (CLEANED, CLEANED_SIDE)).values() if p.startswith(results))
    return sorted(inputs)


def mining_jobs(plan: Plan, base_dir: Path) -> dict[str, str]:
    """{negatives parquet: training shards} over the groups whose variants train on hard negatives.
    One parquet is mined from one set of shards; two groups that disagree are an error."""
    jobs: dict[str, str] = {}
    for group in plan.active():
        gcfg = plan.configs[group.name]
        if not any(uses_negatives(gcfg, v, base_dir) for v in group.variants):
            continue
        data = gcfg.get("data") or {}
        parquet, shards = data.get("negatives", ""), data.get("train_shards", "")
        if not parquet:
            raise ConfigError(f"groups.{group.name}: its variants train on hard negatives but data.negatives is empty")
        if jobs.get(parquet, shards) != shards:
            raise ConfigError(f"data.negatives {parquet}: mined from two different data.train_shards "
                              f"({jobs[parquet]} and {shards}); give each group its own data.negatives path")
        jobs[parquet] = shards
    return jobs


def probe_runs(cfg: dict[str, Any], plan: Plan) -> dict[str, RunKey]:
    """{probe result path: the run it reads} for ``probe:`` (``variants`` name ``<group>/<variant>``, a
    bare name meaning main). A borrowed run is read, and its result written, under its lender."""
    if not setting(cfg, "probe", "enabled"):
        return {}
    results = Path(cfg.get("results", "results"))
    out: dict[str, RunKey] = {}
    for name in setting(cfg, "probe", "variants") or []:
        group, _, variant = str(name).rpartition("/")
        group = group or "main"
        if group not in plan.configs:
            raise ConfigError(f"probe.variants: {name!r}: group {group!r} is not an active group; "
                              f"active: {sorted(plan.configs)}")
        seeds = setting(cfg, "probe", "seeds")
        if not seeds:
            raise ConfigError("probe.seeds: the seeds of the runs to probe are missing (e.g. [0])")
        for size in setting(cfg, "probe", "sizes") or plan.groups[group].sizes:
            for seed in seeds:
                key = RunKey(group, variant, size, int(seed))
                if key not in plan.home:
                    raise ConfigError(f"probe: {key} is not a run of group {group} (probe.variants/sizes/seeds)")
                home = plan.home[key]
                out[str(probe_result(results, home.group, variant, size, seed))] = home
    return out
