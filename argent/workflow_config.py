"""The workflow config, read through one door.

``load_config(path, overrides)`` reads a workflow config file the way Snakemake does (merged over
``config/config.yaml`` unless ``merge_default`` is false; ``--set key.path=value`` overrides on top;
duplicate keys and unknown top-level sections refused, naming the file and the key) and returns a
``WorkflowConfig``. Every verb reads its sections from that object: the mapping as merged (``raw``,
what the workflow's effective config file holds, and what the plan and the tables walk) and each
stage's section typed once, on first use, by the parser ``SECTIONS`` names. A mistyped key in a
section is an error naming the file, the full key path and the allowed keys. The DAG build
(argent/plan/dag.py) and ``argent check`` parse every section the config holds (``check_all``);
the keys and defaults of the typed sections are their types' only (``setting`` reads one value),
the Snakemake schema keeps just the patterns of values that reach a shell or a path.

Run-level sections (model, train, optim, data, tracking, variant) are typed per run by
``WorkflowConfig.experiment`` (``argent.config.experiment_from_dict``); the experiment groups by
``argent.plan.groups``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from argent.config import experiment_from_dict
from argent.typed import ConfigError, deep_merge, load_merged_config, load_workflow_config, named, parse_override

__all__ = ["SECTIONS", "SECTION_TYPES", "WorkflowConfig", "load_config", "setting"]

# section -> "module:parser"; ``parser(raw mapping, base_dir)`` returns the typed section (absent
# section: its defaults, or an error naming what is missing). Imported on first use, so that reading
# one section does not import every stage.
SECTIONS: dict[str, str] = {
    "clean": "argent.cleaning.config:clean_section",
    "negatives": "argent.negatives.config:negatives_section",
    "probe": "argent.probe.config:probe_section",
    "tune": "argent.tuning.config:tune_section",
    "benchmarks": "argent.evaluation.benchmarks:benchmarks_section",
    "pretrained": "argent.plan.pretrained:pretrained_section",
}

# section -> "module:Class": the typed section whose field defaults are the only defaults of its keys
# (the Snakemake schema checks their patterns and sets none; tests/test_workflow_config.py).
SECTION_TYPES: dict[str, str] = {
    "clean": "argent.cleaning.config:CleanSection",
    "negatives": "argent.negatives.config:MiningConfig",
    "probe": "argent.probe.config:ProbeSection",
    "tune": "argent.tuning.config:TuneConfig",
}


def section_type(section: str) -> type:
    return named(SECTION_TYPES[section])


def setting(cfg: dict[str, Any], section: str, key: str) -> Any:
    """``cfg[section][key]`` as written, else the typed section's default for it. For readers of the
    raw mapping (the plan, the rules) that need one value, not the whole section checked."""
    value = (cfg.get(section) or {}).get(key, dataclasses.MISSING)
    if value is not dataclasses.MISSING:
        return value
    fields = {f.name: f for f in dataclasses.fields(section_type(section))}
    if key not in fields:
        raise KeyError(f"{section}.{key}: not a key of {SECTION_TYPES[section]}")
    f = fields[key]
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


class WorkflowConfig:
    """One workflow config: ``raw`` (the merged mapping) and its typed sections, each parsed once."""

    def __init__(self, raw: dict[str, Any], where: str = "", base_dir: Path | None = None) -> None:
        self.raw = raw
        self.where = where  # the file (and "with --set"), put before a section's error
        self.base_dir = Path.cwd() if base_dir is None else Path(base_dir)
        self._typed: dict[str, Any] = {}

    def section(self, name: str) -> Any:
        if name not in SECTIONS:
            raise KeyError(f"no typed section {name!r}; typed: {sorted(SECTIONS)}")
        if name not in self._typed:
            try:
                self._typed[name] = named(SECTIONS[name])(self.raw, self.base_dir)
            except ConfigError as err:
                raise ConfigError(f"{self.where}: {err}" if self.where else str(err)) from None
        return self._typed[name]

    def check_all(self) -> None:
        """Parse every typed section the config holds (a typo anywhere is found before any job runs)."""
        for name in SECTIONS:
            if name in self.raw:
                self.section(name)

    @property
    def clean(self) -> Any:
        return self.section("clean")

    @property
    def negatives(self) -> Any:
        return self.section("negatives")

    @property
    def probe(self) -> Any:
        return self.section("probe")

    @property
    def tune(self) -> Any:
        return self.section("tune")

    @property
    def pretrained(self) -> Any:
        return self.section("pretrained")

    def benchmark(self, name: str) -> Any:
        """The validated entry ``benchmarks.<name>``."""
        entries = self.section("benchmarks")
        if not entries:
            raise ConfigError(f"{self.where or 'config'}: no 'benchmarks' section (benchmarks: <name>: {{protocol: ...}})")
        if name not in entries:
            raise ConfigError(f"{self.where or 'config'}: benchmarks.{name} not found; known: {sorted(entries)}")
        return entries[name]

    def experiment(self, variant: str, size: str, seed: int, variant_overrides: dict[str, Any] | None = None) -> Any:
        """One run's ``ExperimentConfig`` (the variant catalogue, ``model.<size>``, ``train``, ...)."""
        return experiment_from_dict(self.raw, variant, size, seed, base_dir=self.base_dir,
                                    variant_overrides=variant_overrides)


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = (), *,
                base_dir: str | Path | None = None, merge_default: bool = True,
                only: str | None = None) -> WorkflowConfig:
    """Read a workflow config (``None``: empty, every default) with ``--set`` overrides.

    ``only``: the one section a single-stage verb reads (argent clean, mine, probe); an override of
    another section would do nothing there, and is refused. ``base_dir``: where ``config/config.yaml``
    is looked for and relative data paths are taken from (default: the working directory).
    """
    parsed = []
    for text in overrides:
        try:
            parsed.append(parse_override(text))
        except ConfigError as err:
            raise ConfigError(f"--set {text!r}: {err}") from None
        if only is not None and set(parsed[-1]) != {only}:
            raise ConfigError(f"--set {text}: this verb reads only the {only}: section; use {only}.<key>=<value>")
    if path is None:
        raw: dict[str, Any] = {}
        for override in parsed:
            raw = deep_merge(raw, override)
        where = "--set" if overrides else ""
    else:
        raw = (load_merged_config(path, overrides, base_dir, merge_default) if merge_default
               else load_workflow_config(path, overrides))
        where = f"{path}{' with --set' if overrides else ''}"
    return WorkflowConfig(raw, where, Path(base_dir) if base_dir is not None else None)
