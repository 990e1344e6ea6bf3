"""The data a job reads, checked through its real readers: a few records of the training shards, their counts
against their data set's manifest, the shard files a pattern names (a folder among them is refused), and the
benchmarks' data paths (a HierarCaps file read)."""

from __future__ import annotations

import glob
import itertools
from pathlib import Path
from typing import Any

from argent.config import setting
from argent.data.formats.hierarcaps import read_hierarcaps_records
from argent.data.manifest import manifest_check, mismatch_message
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import expand_shards
from argent.io import ArgentError
from argent.plan.preflight import Finding, benchmark_findings, is_produced

SAMPLE_RECORDS = 4


def _sample_shards(pattern: str, fmt: str, min_box_area: int) -> str:
    from argent.data.formats.grounded import iter_records  # torch: imported when shards are read, not for --help

    policy = BadDataPolicy("skip")
    records = list(itertools.islice(iter_records(pattern, fmt=fmt, min_box_area=min_box_area, policy=policy),
                                    SAMPLE_RECORDS))
    if not records:
        raise ArgentError(f"data.train_shards: {pattern}: no usable record in the first shard ({policy.report()})")
    return f"{len(records)} records read"


def _shard_folders(pattern: str) -> list[str]:
    """Folders that ``data.train_shards`` names or matches: the shard reader keeps files only, so a
    folder (``data/train/``, or one named ``shard-1.tar`` among the shards) would be skipped silently."""
    from braceexpand import braceexpand  # the shard reader's own pattern language

    found = []
    for expanded in braceexpand(pattern):
        found += [m for m in (glob.glob(expanded) if glob.has_magic(expanded) else [expanded]) if Path(m).is_dir()]
    return sorted(set(found))


def shard_count(pattern: str, cfg: dict[str, Any], prefixes: list[str]) -> int | None:
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


def training_data(cfg: dict[str, Any], configs: dict[str, dict[str, Any]],
                  prefixes: list[str]) -> tuple[list[Finding], list[str]]:
    """(findings, problems) of the training data of every active experiment group (``configs``: each may
    override ``data:``), read once per pattern."""
    findings: list[Finding] = []
    problems: list[str] = []
    sources = {"data.train_shards": cfg.get("data") or {}}
    sources.update({f"groups.{g}.data.train_shards": gcfg.get("data") or {} for g, gcfg in configs.items()})
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
        findings.append(_shards_finding(key, shards, data, prefixes))
    return findings, problems


def _shards_finding(key: str, shards: str, data: dict[str, Any], prefixes: list[str]) -> Finding:
    """One pattern of training shards: made by the workflow, or a few records read and its counts checked."""
    counted = _manifest_finding(key, shards, data.get("bad_data", "skip"))
    if is_produced(shards, prefixes):
        return counted or Finding(key, shards, "produced")
    try:
        sampled = _sample_shards(shards, data.get("format", "grounded"), data.get("min_box_area", 1024))
    except ArgentError as err:
        return Finding(key, shards, "unreadable", str(err))
    if counted is None or counted.status == "ok":
        return Finding(key, shards, "ok", "; ".join(d for d in (sampled, counted and counted.detail) if d))
    return counted


def benchmark_data(cfg: dict[str, Any], prefixes: list[str], base_dir: Path) -> tuple[list[Finding], list[str]]:
    """(findings, problems) of the evaluated benchmarks' data paths, a HierarCaps file read through its reader."""
    findings: list[Finding] = []
    problems: list[str] = []
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
    return findings, problems
