"""The workflow config, read through one door.

``load_config(path, overrides)`` reads a workflow config file the way Snakemake does (merged over
``config/config.yaml`` unless ``merge_default`` is false; ``--set key.path=value`` overrides on top;
duplicate keys and unknown top-level sections refused, naming the file and the key; the paths derived
from ``results:`` and ``hiershapes.out`` filled in, argent/config/derived_paths.py) and returns a
``WorkflowConfig``. Every verb reads its sections from that object: the mapping as merged (``raw``,
what the workflow's effective config file holds and the run identities hash; ``written(section)`` one
section of it verbatim) and each section typed once, on first use, by its entry in the one registry ``SECTIONS`` (argent/config/registry.py:
every top-level key, its dataclass and its shape). A mistyped key in a section is an error naming
the file, the full key path and the allowed keys. The DAG build (argent/plan/dag.py) and ``argent
check`` parse every section the config holds (``check_all``); the keys and defaults of every section
are its type's only (``setting`` reads one value), the Snakemake schema keeps just the patterns of
values that reach a shell or a path. docs/config.md lists the merge layers and how to add a key or
a section.

Run-level sections (model, train, optim, data, tracking, variant) are merged per run by
``WorkflowConfig.experiment`` (``argent.config.experiment_from_dict``); the experiment groups by
``argent.plan.groups``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config.convert import ConfigError, check_partial, from_dict
from argent.config.derived_paths import derive_paths
from argent.config.experiment import experiment_from_dict
from argent.config.loading import deep_merge, load_merged_config, load_workflow_config, parse_override
from argent.config.registry import SECTIONS, Section, check_sections, section_of, section_type, setting
from argent.lazy import named
from argent.runs.layout import DEFAULT_RESULTS

__all__ = ["SECTIONS", "Section", "TopLevel", "WorkflowConfig", "check_snakemake_config", "load_config",
           "parse_section", "section_type", "setting"]


@dataclass
class TopLevel:
    """The workflow config's top-level values (``value`` sections of ``SECTIONS``), one field each."""

    results: str = DEFAULT_RESULTS  # the output folder: every path the workflow writes is under it
    variants_file: str = "config/variants.yaml"  # the variant catalogue (relative: to the working folder)
    # The home of a YAML anchor (``&hs_templates``) that benchmark entries refer to; read by nothing else.
    hiershapes_templates: list[str] = field(default_factory=list)


def _entries(value: dict[str, Any], name: str) -> dict[str, Any]:
    for key, entry in value.items():
        if entry is not None and not isinstance(entry, dict):
            raise ConfigError(f"{name}.{key}: expected a mapping, got {entry!r}")
    return value


def parse_section(raw: dict[str, Any], name: str, base_dir: Path | None = None) -> Any:
    """Section ``name`` of the mapping ``raw``, typed by its ``SECTIONS`` entry (absent: its
    defaults, or the error its parser gives for a section that is required)."""
    spec: Section = SECTIONS[name]
    if spec.parse:
        return named(spec.parse)(raw, base_dir)
    cls = section_type(name)
    if spec.shape == "value":
        return getattr(from_dict(cls, {name: raw[name]} if name in raw else {}), name)
    value = section_of(raw, name)
    if spec.shape == "section":
        return from_dict(cls, value, name)
    if spec.shape == "partial":
        check_partial(cls, value, name)
        return value
    if spec.shape == "entries":
        return {key: from_dict(cls, entry or {}, f"{name}.{key}") for key, entry in _entries(value, name).items()}
    for key, entry in _entries(value, name).items():  # partial_entries
        check_partial(cls, entry or {}, f"{name}.{key}")
    return value


class WorkflowConfig:
    """One workflow config: ``raw`` (the merged mapping) and its typed sections, each parsed once."""

    def __init__(self, raw: dict[str, Any], where: str = "", base_dir: Path | None = None) -> None:
        self.raw = raw
        self.where = where  # the file (and "with --set"), put before a section's error
        self.base_dir = Path.cwd() if base_dir is None else Path(base_dir)
        self._typed: dict[str, Any] = {}

    def _error(self, err: ConfigError) -> ConfigError:
        return ConfigError(f"{self.where}: {err}" if self.where else str(err))

    def section(self, name: str) -> Any:
        if name not in SECTIONS:
            raise KeyError(f"no section {name!r}; known: {list(SECTIONS)}")
        if name not in self._typed:
            try:
                self._typed[name] = parse_section(self.raw, name, self.base_dir)
            except ConfigError as err:
                raise self._error(err) from None
        return self._typed[name]

    def check_all(self) -> None:
        """The top-level keys, then every section the config holds or the workflow requires, typed (a
        typo anywhere is found before any job runs)."""
        check_sections(self.raw, self.where or "config")  # its message names the file once
        for name in SECTIONS:
            if name in self.raw:
                self.section(name)
        for name, spec in SECTIONS.items():  # then a missing one the workflow needs
            if spec.required:
                self.section(name)

    def setting(self, section: str, key: str | None = None) -> Any:
        """One value as written, else its type's default (``argent.config.setting``)."""
        return setting(self.raw, section, key)

    def written(self, name: str) -> dict[str, Any]:
        """Section ``name`` as written (absent: empty): for a reader that needs its values verbatim, such as the
        paths a rule names (typed ``benchmarks:`` entries hold them absolute) or a hash of what the user wrote."""
        if name not in SECTIONS:
            raise KeyError(f"no section {name!r}; known: {list(SECTIONS)}")
        try:
            return section_of(self.raw, name)
        except ConfigError as err:
            raise self._error(err) from None

    @property
    def results(self) -> str:
        return self.section("results")

    @property
    def variants_file(self) -> str:
        return self.section("variants_file")

    @property
    def hiershapes(self) -> Any:
        return self.section("hiershapes")

    @property
    def runs(self) -> Any:
        return self.section("runs")

    @property
    def train(self) -> Any:
        return self.section("train")

    @property
    def data(self) -> Any:
        return self.section("data")

    @property
    def evaluate(self) -> Any:
        return self.section("evaluate")

    @property
    def cost(self) -> Any:
        return self.section("cost")

    @property
    def tables(self) -> Any:
        return self.section("tables")

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
    def tune_or_defaults(self) -> Any:
        """The ``tune:`` section typed, or every default when the config has none (tuning off): for the plan,
        which asks whether a study runs; ``tune`` itself requires the section, as the tuning verbs do."""
        return self.tune if self.raw.get("tune") is not None else parse_section({"tune": {}}, "tune", self.base_dir)

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


def check_snakemake_config(config: dict[str, Any], command_line: Mapping[str, Any]) -> None:
    """The config Snakemake merged, checked before the workflow reads it; ``command_line`` is what its
    ``--config KEY=VALUE`` set. Snakemake sets top-level keys only there (it refuses a dotted key
    itself, before the workflow is read), so a key that is no section is named with the ways that work."""
    unknown = sorted(set(command_line) - set(SECTIONS), key=str)
    if unknown:
        raise ConfigError(f"snakemake --config {unknown[0]}=...: not a top-level section of the workflow config "
                          f"(allowed: {', '.join(SECTIONS)}); Snakemake's --config KEY=VALUE sets top-level keys "
                          f"only, a nested key such as train.steps cannot be set that way: write it in a config file "
                          f"(--configfile FILE holding `train: {{steps: 10}}`), or use argent's --set train.steps=10")
    check_sections(config)


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
    try:
        raw = derive_paths(raw)  # the paths argent.runs.layout derives from results: and hiershapes.out
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}" if where else str(err)) from None
    return WorkflowConfig(raw, where, Path(base_dir) if base_dir is not None else None)
