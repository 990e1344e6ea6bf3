"""Each run as its job would start it: its resolved config, its memory need (argent/models/memory.py), its data
streams against the shards, the devices it asks for; the study's objective; the runs the claims name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argent.check.data import shard_count
from argent.config import ConfigError, ExperimentConfig, WorkflowConfig, experiment_from_dict, setting
from argent.config.groups import TUNED_SUFFIX, base_variant
from argent.io import ArgentError
from argent.models.memory import cpu_shortfall
from argent.plan.groups import Plan
from argent.tablespec.claims import ClaimsSpec


def device_problems(devices: dict[str, str]) -> list[str]:
    """One line per device a job would ask for and not find ({device: the config key that asks})."""
    from argent.device import require_device  # torch: imported when a device is checked, not for --help

    problems = []
    for device, key in sorted(devices.items()):
        try:
            require_device(device)
        except ArgentError as err:  # its fix names --device; here the key is what to change
            problems.append(f"{key}: {str(err).split(';')[0]}; set {key}: cpu, or run where it is available")
    return problems


def objective_problems(workflow: WorkflowConfig, base_dir: Path) -> list[str]:
    """``tune.objective`` as the study reads it before its first trial (each term a metric its
    validation benchmark writes), when the study runs: a typo passed ``snakemake -n`` and this check."""
    if not workflow.setting("tune", "enabled"):
        return []
    from argent.tuning.validation import validation_benchmarks

    try:
        validation_benchmarks(workflow.tune, workflow.raw, base_dir)
    except ConfigError as err:
        return [str(err)]
    return []


def _stream_problem(exp: ExperimentConfig, gpus: int, shards: int | None, run: str) -> str | None:
    """``train.data_streams`` per rank × ranks must not exceed the shards (the trainer's refusal: every
    stream reads its own shards)."""
    streams = exp.train.data_streams * max(1, gpus)
    if shards is None or shards >= streams:
        return None
    return (f"run {run}: train.data_streams {exp.train.data_streams} × {max(1, gpus)} rank(s) (runs.gpus) = {streams} "
            f"data streams, but data.train_shards names {shards} shard file(s); every stream needs its own shard: "
            f"lower train.data_streams to at most {max(1, shards // max(1, gpus))}, or write more, smaller shards")


def claim_run_problems(claims: ClaimsSpec | None, catalogue: set[str], where: str = "claims") -> list[str]:
    """A claim whose run can be no run at all (``argent tables`` printed one line and wrote no claims
    table): its variant is neither in the variant catalogue nor ``<variant>-tuned`` of one (a typo). A run of a group
    this config does not define or train is another config's (one claims file serves every config, and
    config/smoke.yaml trims the groups): "not run" in the claims table, no error."""
    problems = []
    for claim in claims.claims if claims else []:
        for side in ("a", "b"):
            name = getattr(claim, side)
            variant = name.rpartition("/")[2]
            if variant not in catalogue and variant.removesuffix(TUNED_SUFFIX) not in catalogue:
                known = sorted(v for v in catalogue if v[:3] == variant[:3]) or sorted(catalogue)[:6]
                problems.append(f"{where}: claim {claim.id}: {side}: {name!r}: no variant {variant!r} in "
                                f"the variant catalogue (variants_file), so no run can ever fill it; a typo? "
                                f"(e.g. {', '.join(known)})")
    return problems


def run_problems(cfg: dict[str, Any], plan: Plan, base_dir: Path, prefixes: list[str],
                  devices: dict[str, str]) -> list[str]:
    """Each distinct (group, variant, size) the plan trains, as its job would start it: its resolved config,
    its memory need, its data streams against the shards; the devices it asks for go into ``devices``."""
    problems: list[str] = []
    shard_counts: dict[str, int | None] = {}
    for group, variant, size in dict.fromkeys((k.group, k.variant, k.size) for k in plan.trained):
        try:
            exp = experiment_from_dict(plan.configs[group], base_variant(cfg, variant), size, 0, base_dir=base_dir)
        except ConfigError as err:
            problems.append(f"run {group}/{variant}-{size}: {err}")
            continue
        own = (plan.groups[group].overrides.get("train") or {}).get("device")  # the key to name is the one set
        devices.setdefault(exp.train.device, f"groups.{group}.overrides.train.device" if own else "train.device")
        pattern = exp.data.train_shards
        if pattern not in shard_counts:
            shard_counts[pattern] = shard_count(pattern, cfg, prefixes) if pattern else None
        gpus = int(setting(plan.configs[group], "runs", "gpus") or 0)
        problems += [p for p in (cpu_shortfall(exp, f"{group}/{variant}-{size}"),
                                 _stream_problem(exp, gpus, shard_counts[pattern], f"{group}/{variant}-{size}")) if p]
    return problems
