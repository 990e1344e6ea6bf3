"""The ``runs:`` and ``groups:`` sections as the workflow config writes them, typed: a group's variants,
sizes, seeds, overrides and borrowing (``GroupEntry``, ``GroupOverrides``), the sizes and seeds of a
group that names none and every training job's resources (``RunsSection``, ``RunResources``), each
list checked for names that become path components and for repeats. argent/config/groups.py resolves
them into the groups and each run's config; argent/plan/groups.py into the runs to train.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from argent.config.convert import ConfigError, check_partial, check_range, from_dict
from argent.config.experiment import check_name
from argent.config.limits import check_seed
from argent.config.registry import section_of
from argent.config.workflow import parse_section


@dataclass
class RunResources:
    """What one training job of a group asks the scheduler for (``runs:``, a group's ``overrides.runs``)."""

    gpus: int = 0  # per run; > 1: torchrun --standalone, DDP
    threads_per_run: int = 1
    mem_mb: int = 4000
    runtime_min: int = 60

    def __post_init__(self) -> None:
        check_range("gpus", self.gpus, low=0)
        check_range("threads_per_run", self.threads_per_run, low=1)
        check_range("mem_mb", self.mem_mb, low=100)
        check_range("runtime_min", self.runtime_min, low=1)


@dataclass
class RunsSection(RunResources):
    """``runs:``: the sizes and seeds of every group that names none, and its jobs' resources."""

    sizes: list[str] = field(default_factory=lambda: ["tiny"])
    seeds: list[int] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        super().__post_init__()
        _names(self.sizes, "sizes", "size")
        _seeds(self.seeds, "seeds")


def _distinct(values: list[Any], key: str) -> None:
    """A repeated seed, variant or size would be planned, trained into one folder and counted twice."""
    for i, value in enumerate(values):
        if value in values[:i]:
            raise ConfigError(f"{key}[{i}]: {value!r} is listed twice (first at {key}[{values.index(value)}]); "
                              f"list each once")


def _names(values: list[str], key: str, what: str) -> None:
    if not values:
        raise ConfigError(f"{key}: empty; list at least one")
    for i, value in enumerate(values):
        check_name(value, f"{key}[{i}] {what}")
    _distinct(values, key)


def _seeds(values: list[int], key: str) -> None:
    if not values:
        raise ConfigError(f"{key}: empty; list at least one")
    for i, value in enumerate(values):
        check_seed(value, f"{key}[{i}]")
    _distinct(values, key)


@dataclass
class GroupOverrides:
    """``groups.<g>.overrides``: run-level sections merged over the base config for this group's jobs,
    each typed as its top-level section is (``SECTIONS``), ``runs`` its resource keys only; the merged
    config is typed again per run (``build_plan``: ranges across keys)."""

    train: dict[str, Any] | None = None
    train_by_size: dict[str, Any] | None = None
    optim: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    variant_overrides: dict[str, Any] | None = None
    runs: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # each key as its top-level section is typed (argent.config.SECTIONS), but runs: resources only
        for key in ("train", "train_by_size", "optim", "data", "model", "variant_overrides"):
            if getattr(self, key) is not None:
                parse_section({key: getattr(self, key)}, key)
        if self.runs is not None:
            check_partial(RunResources, self.runs, "runs")

    def written(self) -> dict[str, Any]:
        """The overrides as written (the sections set), as ``group_config`` merges them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


@dataclass
class GroupEntry:
    """``groups.<g>``: one experiment of the protocol (docs/scaling.md) as the config writes it."""

    REMOVED: ClassVar[dict[str, str]] = {
        "tables": "it was read by nothing (a table names its rows under tables:); delete the key",
        "note": "it was read by nothing; write a YAML comment instead",
    }

    variants: list[str] = field(default_factory=list)  # at least one
    sizes: list[str] | None = None  # None: runs.sizes
    seeds: list[int] | None = None  # None: runs.seeds
    overrides: GroupOverrides = field(default_factory=GroupOverrides)
    # another group whose identical runs (same identity hash) this one reads instead of training
    borrow_from: str = field(default="", metadata={"key": "from"})
    optional: bool = False  # a group that cannot run (no WordNet): left out with one line, not an error
    enabled: bool = True

    def __post_init__(self) -> None:
        _names(self.variants, "variants", "variant")
        if self.sizes is not None:
            _names(self.sizes, "sizes", "size")
        if self.seeds is not None:
            _seeds(self.seeds, "seeds")
        if self.borrow_from:
            check_name(self.borrow_from, "from")


def runs_section(cfg: dict[str, Any]) -> RunsSection:
    """The typed ``runs:`` section (absent: every default)."""
    return from_dict(RunsSection, section_of(cfg, "runs"), "runs")
