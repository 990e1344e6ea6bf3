"""Where the workflow's data paths stand before it runs: found, made by the workflow itself, or missing.

The path half of the preflight (argent/check/ reads the data through its real readers). Paths only,
no torch: the Snakefile runs these checks while it parses, on every job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.config import WorkflowConfig
from argent.evaluation.benchmarks import IMAGES, ITEMS, SIDE, entry_paths
from argent.runs import is_under

__all__ = ["Finding", "benchmark_findings", "is_produced", "missing_required", "produced_prefixes"]


@dataclass
class Finding:
    key: str  # config key path
    path: str
    status: str  # ok | produced | missing-optional | missing | unreadable | counted (skip mode goes on)
    detail: str = ""


def produced_prefixes(workflow: WorkflowConfig) -> tuple[str, ...]:
    """Folders the workflow writes itself: their files do not exist before the DAG runs."""
    return tuple(str(Path(p)) for p in (workflow.results, workflow.hiershapes.out) if p)


def is_produced(path: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``path`` lies in a folder the workflow writes (``produced_prefixes``)."""
    return any(is_under(path, p) for p in prefixes)


def benchmark_findings(name: str, entry: dict[str, Any], prefixes: tuple[str, ...], base_dir: Path) -> list[Finding]:
    """One finding per source data path of ``benchmarks.<name>`` (its items, images and side files, as
    its protocol's entry declares them; shards are checked by their reader, cleaned files fall back)."""
    out = []
    optional = bool(entry.get("optional", False))
    for key, value in entry_paths(entry, (ITEMS, IMAGES, SIDE)).items():
        where = f"benchmarks.{name}.{key}"
        if is_produced(value, prefixes):
            out.append(Finding(where, value, "produced"))
        elif not (base_dir / value).exists():
            out.append(Finding(where, value, "missing-optional" if optional else "missing"))
        else:
            out.append(Finding(where, value, "ok"))
    return out


def missing_required(findings: list[Finding]) -> str | None:
    bad = [f for f in findings if f.status in ("missing", "unreadable")]
    if not bad:
        return None
    lines = [f"{f.key}: {f.path}: {'not found' if f.status == 'missing' else f.detail}" for f in bad]
    if any(f.status == "missing" for f in bad):
        lines.append("fix the path(s), or mark a benchmark `optional: true` to run without it when absent")
    return "\n  ".join(lines)
