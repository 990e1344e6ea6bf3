"""The data a config names that this machine cannot see: ``argent plan`` costs a config without its data
and names every such path (issue 53), so that a cost computed on a laptop says what the cluster must hold.

Paths only, no reader: the training shards of every active group, the data of every benchmark the
workflow evaluates or tunes on (as its protocol's entry declares it; the HierarCaps it cleans is a
benchmark's too; an ``optional`` one is named as such: the workflow skips it), the WordNet the hard
negatives read and the probe's images. A path the workflow writes itself (under
``results:`` or ``hiershapes.out``) is not data it lacks. ``argent check`` reads the data it finds.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path
from typing import Any

from argent.config import WorkflowConfig
from argent.evaluation.benchmarks import IMAGES, ITEMS, SIDE, entry_paths
from argent.plan.groups import Plan, uses_negatives
from argent.plan.preflight import is_produced, produced_prefixes

BRACES = re.compile(r"\{(\d+)\.\.\d+\}")  # webdataset's shard ranges: {00000..02047}


def _present(path: str, base_dir: Path) -> bool:
    """A file or folder, or a shard pattern (glob or webdataset braces) with at least its first file."""
    full = str(path if Path(path).is_absolute() else base_dir / path)
    full = BRACES.sub(lambda m: m.group(1), full)  # the range's first shard
    return bool(glob.glob(full)) if glob.has_magic(full) else Path(full).exists()


def _benchmarks(workflow: WorkflowConfig) -> list[str]:
    """The benchmarks the workflow reads: evaluated, and scored by the study when it runs."""
    names = list(workflow.evaluate.benchmarks or [])
    tune = workflow.tune_or_defaults
    if tune.enabled:
        names += [term.benchmark for term in tune.objective or []]
    return list(dict.fromkeys(n for n in names if n))


def named_paths(workflow: WorkflowConfig, plan: Plan, base_dir: Path) -> dict[str, str]:
    """{path: the config key that names it first} of the data the planned workflow reads."""
    found: dict[str, str] = {}

    def add(key: str, value: Any) -> None:
        if isinstance(value, str) and value:
            found.setdefault(value, key)

    for group in plan.active():
        gcfg = plan.workflow(group.name)
        add(f"groups.{group.name}: data.train_shards", gcfg.data.train_shards)
        if any(uses_negatives(gcfg, v, base_dir) for v in group.variants):
            add(f"groups.{group.name}: negatives.wordnet_zip", gcfg.negatives.wordnet_zip)
    entries = workflow.written("benchmarks")  # the paths as written: what the lines name
    for name in _benchmarks(workflow):
        if isinstance(entries.get(name), dict):
            optional = " (optional: skipped when absent)" if entries[name].get("optional") else ""
            for key, value in entry_paths(entries[name], (ITEMS, IMAGES, SIDE)).items():
                add(f"benchmarks.{name}.{key}{optional}", value)
    if workflow.probe.enabled:
        add("probe.data", workflow.probe.data)
    return found


def unseen_paths(workflow: WorkflowConfig, plan: Plan, base_dir: Path) -> list[tuple[str, str]]:
    """(config key, path) of every data path of the plan that is not on this machine, in config order."""
    prefixes = produced_prefixes(workflow)
    return [(key, path) for path, key in named_paths(workflow, plan, base_dir).items()
            if path != "hiershapes" and not is_produced(path, prefixes) and not _present(path, base_dir)]
