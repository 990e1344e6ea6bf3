"""Strict config plumbing shared by every stage: dict -> dataclass conversion that names the full key
path of an unknown or mistyped key, dict merging, ``key.path=value`` overrides, YAML loading (a
repeated key is an error, not "the last wins"), and the one registry of the workflow config's
top-level sections (``SECTIONS``: each section's dataclass, whose fields are its keys and whose
defaults are their only defaults; ``setting`` reads one value). The types live with the stage that
reads them (the run-level ones in argent/config.py); docs/config.md lists the merge layers.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from argent.io import ArgentError


class ConfigError(ArgentError, ValueError):
    """A config value is missing, unknown or of the wrong type; the message names its key path."""


# --------------------------------------------------------------------------------------------
# Strict YAML: every config file argent or the workflow reads goes through ``strict_yaml``
# --------------------------------------------------------------------------------------------

MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated in one mapping: PyYAML keeps the last one
    silently (a second ``train:`` section, ``{steps: 12, steps: 2}``). ``<<`` merges may still be
    overridden by an explicit key, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    raise ConfigError(f"{key_node.start_mark.name}:{line}: duplicate key {key!r} (first at line "
                                      f"{first[key]}); YAML would keep the last one silently: keep one of them")
                first[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                continue
        return super().construct_mapping(node, deep=deep)


def strict_yaml(text: str, where: str | Path) -> Any:
    """``text`` parsed as YAML by ``StrictLoader``; ``where`` (the file) names it in every error mark."""
    loader = StrictLoader(text)
    loader.name = str(where)  # the marks (line numbers) of every error carry this name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def check_duplicate_keys(paths: typing.Iterable[str | Path]) -> None:
    """Raise ``ConfigError`` for the first repeated key in any of ``paths`` (files that exist and parse;
    other errors are left to the reader that owns the file). For readers that parse YAML themselves:
    Snakemake's ``configfile:``."""
    for path in paths:
        path = Path(path)
        if not path.is_file():
            continue
        try:
            strict_yaml(path.read_text(), path)
        except yaml.YAMLError:
            continue


# --------------------------------------------------------------------------------------------
# Strict dict -> dataclass conversion
# --------------------------------------------------------------------------------------------


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{path}: {value!r} is not allowed; allowed: {list(args)}")
        return value
    if origin in (typing.Union, types.UnionType):
        arms = [arm for arm in args if arm is not type(None)]
        if value is None and len(arms) < len(args):
            return None
        if len(arms) == 1:  # an optional key: the one type's own message (``expected a list``)
            return _convert(value, arms[0], path)
        errors = []
        for arm in args:
            try:
                return _convert(value, arm, path)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(f"{path}: {value!r} matches none of {args}")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        return [_convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ConfigError(f"{path}: expected {len(args)} values, got {value!r}")
        return tuple(_convert(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        return {str(k): _convert(v, args[1], f"{path}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            # PyYAML reads 1e-3 (no dot) as a string; accept what float() reads.
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{path}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is type(None):  # the null arm of an optional key (``x: float | None``)
        if value is not None:
            raise ConfigError(f"{path}: expected null, got {value!r}")
        return None
    raise ConfigError(f"{path}: unsupported type {tp}")


def config_keys(cls: type) -> dict[str, str]:
    """{config key: field name} of dataclass ``cls``. A field's key is its name unless its metadata
    gives one (``field(metadata={"key": "from"})``: a key that is a Python keyword)."""
    return {f.metadata.get("key", f.name): f.name for f in dataclasses.fields(cls)}


def _check_keys(cls: type, data: dict[str, Any], path: str) -> dict[str, str]:
    """The keys of ``data`` that ``cls`` knows; a removed key (``cls.REMOVED``: key -> what to do
    instead) or an unknown one is a ``ConfigError`` naming its path and the allowed keys."""
    keys = config_keys(cls)
    where = path or cls.__name__
    for key, why in getattr(cls, "REMOVED", {}).items():
        if key in data:
            raise ConfigError(f"{where}.{key}: removed; {why}")
    unknown = sorted(set(data) - set(keys), key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {list(keys)}")
    return keys


def from_dict(cls: type, data: dict[str, Any], path: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types raise ``ConfigError``."""
    hints = typing.get_type_hints(cls)
    keys = _check_keys(cls, data, path)
    kwargs = {keys[k]: _convert(v, hints[keys[k]], f"{path}.{k}" if path else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as err:  # a required field is missing
        raise ConfigError(f"{path or cls.__name__}: {err}") from None
    except ConfigError as err:
        raise ConfigError(f"{path}.{err}" if path else str(err)) from None


def check_partial(cls: type, data: Any, path: str) -> None:
    """Check ``data``, a partial mapping of dataclass ``cls`` (an override merged over a base later):
    every key a field of ``cls`` and every value of its field's type, named by its full key path.
    Range checks that need the whole object are left to ``from_dict`` on the merged mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    keys = _check_keys(cls, data, path)
    for key, value in data.items():
        tp = hints[keys[key]]
        if dataclasses.is_dataclass(tp) and isinstance(value, dict):
            check_partial(tp, value, f"{path}.{key}")
        else:
            _convert(value, tp, f"{path}.{key}")


def named(spec: str) -> Any:
    """The object a ``"module:attribute"`` string names, imported now. Registries name their functions
    and types this way, so that reading a registry (the workflow's parse) imports nothing heavy."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def check_range(key: str, value: float, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> None:
    """Raise ``ConfigError`` naming ``key`` when ``value`` is outside [low, high] (open ends when asked).
    ``from_dict`` prefixes the section, so the message carries the key's full path."""
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        raise ConfigError(f"{key}: {value!r} is out of range; must be {' and '.join(x for x in (lo, hi) if x)}")


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; ``override`` wins; neither input is modified."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(text: str) -> dict[str, Any]:
    """``a.b.c=value`` (value parsed as YAML) -> nested dict."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key.path=value")
    key, raw = text.split("=", 1)
    try:
        value = strict_yaml(raw, f"--set {key}")
    except yaml.YAMLError as err:
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({err})") from None
    if not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError(f"override {text!r}: expected key.path=value (an empty part in {key!r})")
    out: dict[str, Any] = {}
    node = out
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


# --------------------------------------------------------------------------------------------
# The registry of the workflow config's top-level sections
# --------------------------------------------------------------------------------------------

Shape = Literal["section", "partial", "entries", "partial_entries", "value"]


@dataclass(frozen=True)
class Section:
    """How one top-level key of the workflow config is typed. ``type`` names a dataclass
    (``"module:Class"``, imported on first use, so that reading one section imports one stage);
    ``shape`` says what the key holds:

    - ``section``: a mapping of the type's fields (``train:``); the fields' defaults are the keys' only ones;
    - ``partial``: some of its fields, merged over another source later (``variant:`` over a variant);
    - ``entries``: names -> a mapping of the type's fields each (``groups:``, ``benchmarks:``);
    - ``partial_entries``: names -> some of its fields each (``model.<size>``, ``variant_overrides.<v>``);
    - ``value``: one value, the type's field of the same name (``results:``).

    ``parse`` (``"module:function"``, ``parse(raw mapping, base_dir)``) types the section where the
    shape's generic parse is not enough (paths made absolute, keys checked across sections);
    ``required``: the workflow cannot run without the section (its parse names what is missing)."""

    type: str
    shape: Shape = "section"
    parse: str = ""
    required: bool = False


# Every top-level key (docs/config.md lists them). A new section is its dataclass and one
# line here (docs/config.md, "How to add"); workflow/schemas/config.schema.yaml lists only the
# sections with a value that reaches a shell or a path (tests/unit/config/test_config_registry.py).
SECTIONS: dict[str, Section] = {
    "variants_file": Section("argent.workflow_config:TopLevel", "value"),
    "results": Section("argent.workflow_config:TopLevel", "value"),
    "hiershapes": Section("argent.data.hiershapes.config:HiershapesSection"),
    "hiershapes_templates": Section("argent.workflow_config:TopLevel", "value"),
    "runs": Section("argent.plan.groups:RunsSection"),
    "model": Section("argent.config:ModelConfig", "partial_entries", "argent.config:model_section"),
    "optim": Section("argent.config:OptimConfig"),
    "train": Section("argent.config:TrainConfig"),
    "train_by_size": Section("argent.config:TrainConfig", "partial_entries", "argent.config:train_by_size_section"),
    "data": Section("argent.config:DataConfig"),
    "tracking": Section("argent.config:TrackingConfig"),
    "variant": Section("argent.variant:VariantConfig", "partial"),
    "variant_overrides": Section("argent.variant:VariantConfig", "partial_entries"),
    "evaluate": Section("argent.evaluation.config:EvaluateSection"),
    "benchmarks": Section("argent.evaluation.benchmarks:CommonOptions", "entries",
                          "argent.evaluation.benchmarks:benchmarks_section"),
    "clean": Section("argent.cleaning.config:CleanSection", "section", "argent.cleaning.config:clean_section"),
    "negatives": Section("argent.negatives.config:MiningConfig", "section", "argent.negatives.config:negatives_section"),
    "tune": Section("argent.tuning.config:TuneConfig", "section", "argent.tuning.config:tune_section"),
    "probe": Section("argent.probe.config:ProbeSection", "section", "argent.probe.config:probe_section"),
    "tables": Section("argent.tables.config:TablesSection", "section", "argent.tables.config:tables_section",
                      required=True),
    "groups": Section("argent.plan.groups:GroupEntry", "entries", "argent.plan.groups:groups_section", required=True),
    "cost": Section("argent.plan.cost:CostSection", "section", "argent.plan.cost:cost_section"),
    "pretrained": Section("argent.models.pretrained.section:PretrainedEntry", "entries",
                          "argent.models.pretrained.section:pretrained_section"),
}

WORKFLOW_SECTIONS = tuple(SECTIONS)
"""The top-level keys of the workflow config. Anything else is a typo, and an error."""


def check_sections(cfg: dict[str, Any], where: str = "config") -> None:
    unknown = sorted(set(cfg) - set(SECTIONS), key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown top-level section(s) {unknown}; allowed: {list(SECTIONS)}"
                          f"{_dotted_hint(unknown)}")


def _dotted_hint(unknown: list[Any]) -> str:
    """A key ``train.steps`` written at the top level is a section's key spelled as a path: say how to nest it."""
    dotted = [str(k) for k in unknown if "." in str(k) and str(k).partition(".")[0] in SECTIONS]
    if not dotted:
        return ""
    section, _, rest = dotted[0].partition(".")
    return (f"; {dotted[0]!r} is one key with a dot in its name, not {rest!r} under {section}: write "
            f"`{section}: {{{rest}: ...}}`, or use argent's --set {dotted[0]}=VALUE")


def section_type(section: str) -> type:
    """The dataclass that types ``section`` (``SECTIONS``), imported now."""
    if section not in SECTIONS:
        raise KeyError(f"{section}: not a section of the workflow config; known: {list(SECTIONS)}")
    return named(SECTIONS[section].type)


def field_default(cls: type, key: str, where: str) -> Any:
    """The default of config key ``key`` of dataclass ``cls`` (a ``KeyError`` naming ``where`` for a
    key the type lacks or a required one)."""
    keys = config_keys(cls)
    if key not in keys:
        raise KeyError(f"{where}: not a key of {cls.__module__}.{cls.__name__}; keys: {list(keys)}")
    f = next(f for f in dataclasses.fields(cls) if f.name == keys[key])
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    raise KeyError(f"{where}: required, it has no default")


def setting(cfg: dict[str, Any], section: str, key: str | None = None) -> Any:
    """``cfg[section][key]`` as written, else its type's default: the one default of every key, for
    readers of the raw mapping (the plan, the rules) that need one value, not the whole section
    checked. ``setting(cfg, "results")`` reads a top-level value (a ``value`` section)."""
    spec = SECTIONS.get(section)
    if spec is None:
        raise KeyError(f"{section}: not a section of the workflow config; known: {list(SECTIONS)}")
    if spec.shape == "value":
        if key is not None:
            raise KeyError(f"{section}.{key}: {section} is a value, not a section; setting(cfg, {section!r})")
        return cfg[section] if section in cfg else field_default(section_type(section), section, section)
    if spec.shape != "section" or key is None:
        raise KeyError(f"{section}{'.' + key if key else ''}: setting() reads one key of a section; {section} "
                       f"is of shape {spec.shape!r} (no default per key): type it with WorkflowConfig.section")
    value = (cfg.get(section) or {}).get(key, dataclasses.MISSING)
    if value is not dataclasses.MISSING:
        return value
    return field_default(section_type(section), key, f"{section}.{key}")


def load_workflow_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The workflow config every verb reads: the file, ``--set key.path=value`` overrides on top, its
    top-level sections checked (a typo is an error naming the key and the allowed sections)."""
    cfg = load_yaml(path)
    check_sections(cfg, str(path))
    for text in overrides:
        override = parse_override(text)
        check_sections(override, f"--set {text}")
        cfg = deep_merge(cfg, override)
    return cfg


DEFAULT_CONFIG = Path("config") / "config.yaml"
"""The Snakefile's ``configfile:``; ``snakemake --configfile FILE`` merges FILE over it."""


def load_merged_config(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                       base_dir: str | Path | None = None, merge_default: bool = True) -> dict[str, Any]:
    """The workflow config as Snakemake sees it: ``<base_dir>/config/config.yaml`` (base_dir: the
    working folder), ``path`` merged over it, then the ``--set`` overrides. Every verb that reads a
    workflow config uses this, so ``--config config/quick.yaml`` means the same to each as to
    Snakemake. ``merge_default=False`` (``--no-default``) reads ``path`` alone; so does a ``path``
    that is the default itself, or a project without a default."""
    default = Path.cwd() / DEFAULT_CONFIG if base_dir is None else Path(base_dir) / DEFAULT_CONFIG
    cfg: dict[str, Any] = {}
    if merge_default and default.is_file() and default.resolve() != Path(path).resolve():
        cfg = load_yaml(default)
        check_sections(cfg, str(default))
    cfg = deep_merge(cfg, load_workflow_config(path, overrides))
    check_sections(cfg)
    return cfg


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = strict_yaml(path.read_text(), path) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


# --------------------------------------------------------------------------------------------
# One section of the workflow config
# --------------------------------------------------------------------------------------------


def section_of(raw: dict[str, Any], section: str) -> dict[str, Any]:
    """``raw[section]`` as a mapping (absent or null: empty, so every default applies)."""
    value = raw.get(section)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{section}: expected a mapping, got {value!r}")
    return value
