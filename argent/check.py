"""`argent check --config FILE`: fail fast, before the expensive part.

Validates the whole workflow config (every run's resolved config), every data path of what the
config enables (training shards, evaluated benchmarks), reads a few records of each data set
through its real reader, checks the device and the free disk. The workflow runs it as its first job.
It refuses what a job would refuse (or skip without a word): a device the machine lacks (``train.device``,
a group's override, ``clean.device``), a CPU run whose memory need exceeds the machine's
(argent/models/memory.py, a lower bound), a folder where ``data.train_shards`` wants shard files, and a
``tune.objective`` metric its validation benchmark does not write (when the study runs).

A benchmark is required unless its entry says ``optional: true``: a missing required one is an
error naming the key and the path; a missing optional one is one printed line. Paths under the
results folder or the embedded benchmark's folder are made by the workflow itself and not checked.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import shutil
import sys
from pathlib import Path
from typing import Any

from argent.config import (
    ConfigError,
    ExperimentConfig,
    WorkflowConfig,
    check_sections,
    experiment_from_dict,
    load_config,
    setting,
)
from argent.config.groups import TUNED_SUFFIX, base_variant
from argent.data.formats.hierarcaps import read_hierarcaps_records
from argent.data.manifest import manifest_check, mismatch_message
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import expand_shards
from argent.io import ArgentError, atomic_write_json
from argent.models.memory import cpu_shortfall
from argent.plan.groups import Plan, build_plan
from argent.plan.inputs import declared_hash_refusals, results_problem
from argent.plan.preflight import Finding, benchmark_findings, is_produced, missing_required, produced_prefixes
from argent.tablespec.claims import ClaimsSpec, check_claims

SAMPLE_RECORDS = 4


class PreflightError(ArgentError):
    """Something the config enables cannot run; the message lists every problem found."""


def _sample_shards(pattern: str, fmt: str, min_box_area: int) -> str:
    from argent.data.formats.grounded import iter_records  # torch: imported when shards are read, not for --help

    policy = BadDataPolicy("skip")
    records = list(itertools.islice(iter_records(pattern, fmt=fmt, min_box_area=min_box_area, policy=policy),
                                    SAMPLE_RECORDS))
    if not records:
        raise ArgentError(f"data.train_shards: {pattern}: no usable record in the first shard ({policy.report()})")
    return f"{len(records)} records read"


def _device_problems(devices: dict[str, str]) -> list[str]:
    """One line per device a job would ask for and not find ({device: the config key that asks})."""
    from argent.device import require_device  # torch: imported when a device is checked, not for --help

    problems = []
    for device, key in sorted(devices.items()):
        try:
            require_device(device)
        except ArgentError as err:  # its fix names --device; here the key is what to change
            problems.append(f"{key}: {str(err).split(';')[0]}; set {key}: cpu, or run where it is available")
    return problems


def _shard_folders(pattern: str) -> list[str]:
    """Folders that ``data.train_shards`` names or matches: the shard reader keeps files only, so a
    folder (``data/train/``, or one named ``shard-1.tar`` among the shards) would be skipped silently."""
    from braceexpand import braceexpand  # the shard reader's own pattern language

    found = []
    for expanded in braceexpand(pattern):
        found += [m for m in (glob.glob(expanded) if glob.has_magic(expanded) else [expanded]) if Path(m).is_dir()]
    return sorted(set(found))


def _objective_problems(workflow: WorkflowConfig, base_dir: Path) -> list[str]:
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


def _shard_count(pattern: str, cfg: dict[str, Any], prefixes: list[str]) -> int | None:
    """How many shard files ``pattern`` names: those on disk, else, for the embedded data the workflow
    makes, ``ceil(train_scenes / shard_size)`` of ``hiershapes.params``; None when unknown."""
    try:
        return len(expand_shards(pattern))
    except ArgentError:
        pass
    params = setting(cfg, "hiershapes", "params") or {}
    scenes, size = params.get("train_scenes"), params.get("shard_size")
    if is_produced(pattern, prefixes) and isinstance(scenes, int) and isinstance(size, int) and size > 0:
        return -(-scenes // size)
    return None


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


def _manifest_finding(key: str, pattern: str, bad_data: str) -> Finding | None:
    """The shards' sample counts against their data set's manifest (argent/data/manifest.py), when
    the shards exist and a manifest lists them: ``ok``; a difference is ``unreadable`` in strict
    mode, ``counted`` in skip mode (training goes on and counts it). Tar headers only: cheap."""
    try:
        shards = expand_shards(pattern)
        check = manifest_check(pattern, shards)
    except BadDataError:
        return None  # no shard there (yet): the sampling read, or the workflow's synth rule, deals with it
    except ArgentError as err:  # a torn manifest
        return Finding(key, pattern, "unreadable", str(err))
    if check is None:
        return None
    if check.differences:
        return Finding(key, pattern, "unreadable" if bad_data == "strict" else "counted", mismatch_message(check))
    return Finding(key, pattern, "ok", f"{sum(check.expected.values())} samples in {len(check.expected)} shard(s), "
                                       f"as {check.manifest} lists")


def _run_problems(cfg: dict[str, Any], plan: Plan, base_dir: Path, prefixes: list[str],
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
            shard_counts[pattern] = _shard_count(pattern, cfg, prefixes) if pattern else None
        gpus = int(setting(plan.configs[group], "runs", "gpus") or 0)
        problems += [p for p in (cpu_shortfall(exp, f"{group}/{variant}-{size}"),
                                 _stream_problem(exp, gpus, shard_counts[pattern], f"{group}/{variant}-{size}")) if p]
    return problems


def preflight(cfg: dict[str, Any], base_dir: Path, min_free_gb: float = 1.0,
              claims: ClaimsSpec | None = None) -> list[Finding]:
    """Every check; raises ``PreflightError`` listing every problem, else returns the findings."""
    check_sections(cfg)
    prefixes = produced_prefixes(cfg)
    findings: list[Finding] = []
    problems: list[str] = []
    devices: dict[str, str] = {}  # device -> the key that asks for it
    results_folder = Path(str(setting(cfg, "results")))
    unusable = results_problem(results_folder if results_folder.is_absolute() else base_dir / results_folder)
    if unusable:
        problems.append(unusable)
    try:
        plan = build_plan(cfg, base_dir)  # the experiment groups; a group that cannot run is an error here
    except ConfigError as err:
        plan = None
        problems.append(f"groups: {err}")
    if plan is not None:
        problems += _run_problems(cfg, plan, base_dir, prefixes, devices)
        problems += declared_hash_refusals(plan, base_dir)  # data built as another dataset_hash than declared
    if setting(cfg, "clean", "datasets"):  # the cleaning jobs run on clean.device
        devices.setdefault(setting(cfg, "clean", "device"), "clean.device")
    problems += _device_problems(devices)
    problems += _objective_problems(WorkflowConfig(cfg, "config", base_dir), base_dir)

    # the training data of every active experiment group (each may override data:), read once per pattern
    sources = {"data.train_shards": cfg.get("data") or {}}
    sources.update({f"groups.{g}.data.train_shards": gcfg.get("data") or {} for g, gcfg in (plan.configs if plan else {}).items()})
    seen = set()
    for key, data in sources.items():
        shards = data.get("train_shards", "")
        if not shards or shards in seen:
            continue
        seen.add(shards)
        folders = _shard_folders(shards)
        if folders:
            what = "is a folder, not a shard file" if len(folders) == 1 else "are folders, not shard files"
            problems.append(f"{key}: {shards}: {', '.join(folders)} {what} (training would skip it); name the .tar "
                            f"files, e.g. {folders[0].rstrip('/')}/shard-*.tar")
            continue
        counted = _manifest_finding(key, shards, data.get("bad_data", "skip"))
        if is_produced(shards, prefixes):
            findings.append(counted or Finding(key, shards, "produced"))
            continue
        try:
            sampled = _sample_shards(shards, data.get("format", "grounded"), data.get("min_box_area", 1024))
        except ArgentError as err:
            findings.append(Finding(key, shards, "unreadable", str(err)))
            continue
        if counted is None or counted.status == "ok":
            findings.append(Finding(key, shards, "ok", "; ".join(d for d in (sampled, counted and counted.detail) if d)))
        else:
            findings.append(counted)

    benchmarks = cfg.get("benchmarks") or {}
    for name in setting(cfg, "evaluate", "benchmarks"):
        if name not in benchmarks:
            problems.append(f"evaluate.benchmarks: {name!r} is not defined under benchmarks:")
            continue
        entry = benchmarks[name]
        found = benchmark_findings(name, entry, prefixes, base_dir)
        findings += found
        csv_path = entry.get("hierarcaps_csv")
        if csv_path and all(f.status == "ok" for f in found):
            try:
                records, _ = read_hierarcaps_records(base_dir / csv_path, None, BadDataPolicy("skip"))
                found[0].detail = f"{len(records)} HierarCaps rows read"
            except ArgentError as err:
                findings.append(Finding(f"benchmarks.{name}.hierarcaps_csv", csv_path, "unreadable", str(err)))

    if plan is not None and claims is not None:
        from argent.config import load_variants

        catalogue = set(load_variants(base_dir / str(setting(cfg, "variants_file"))))
        problems += claim_run_problems(claims, catalogue, "tables.claims.file")
    results = base_dir / setting(cfg, "results")
    probe = results if results.is_dir() else base_dir
    free_gb = shutil.disk_usage(probe).free / 2**30
    if free_gb < min_free_gb:
        problems.append(f"results: {results}: only {free_gb:.1f} GiB free (at least {min_free_gb:g} GiB wanted); "
                        f"free space or point results elsewhere")
    message = missing_required(findings)
    if message:
        problems.append(message)
    if problems:
        raise PreflightError("preflight found problems:\n  " + "\n  ".join(problems))
    return findings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent check", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, required=True, help="workflow config (e.g. config/config.yaml)")
    p.add_argument("--base-dir", type=Path, default=Path.cwd(), help="relative paths are taken from here (default: cwd)")
    p.add_argument("--min-free-gb", type=float, default=1.0, help="least free disk space under results/ (GiB)")
    p.add_argument("--out", type=Path, default=None, help="write the findings as JSON here (the workflow's marker)")
    p.add_argument("--no-default", action="store_true", help="do not merge the file over config/config.yaml")
    args = p.parse_args(argv)
    # merged over config/config.yaml as Snakemake's --configfile does (the workflow's own merged file is a fixpoint)
    workflow = load_config(args.config, base_dir=args.base_dir, merge_default=not args.no_default)
    workflow.check_all()  # every section, typed by its dataclass (argent.config.SECTIONS)
    claims = check_claims(workflow.raw, args.base_dir)  # the claims file and its role map, as the tables job reads them
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
