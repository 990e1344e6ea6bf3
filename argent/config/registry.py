"""The one registry of the workflow config's top-level sections (``SECTIONS``): each section's dataclass,
whose fields are its keys and whose defaults are their only defaults, and its shape; ``setting`` reads
one value. The types live with the stage that reads them (the run-level ones in argent/config/experiment.py);
docs/config.md lists the sections and how to add one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from argent.config.convert import ConfigError, config_keys
from argent.lazy import named

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
    "variants_file": Section("argent.config.workflow:TopLevel", "value"),
    "results": Section("argent.config.workflow:TopLevel", "value"),
    "hiershapes": Section("argent.data.hiershapes.config:HiershapesSection"),
    "hiershapes_templates": Section("argent.config.workflow:TopLevel", "value"),
    "runs": Section("argent.config.group_entries:RunsSection"),
    "model": Section("argent.config.experiment:ModelConfig", "partial_entries",
                     "argent.config.experiment:model_section"),
    "optim": Section("argent.config.experiment:OptimConfig"),
    "train": Section("argent.config.experiment:TrainConfig"),
    "train_by_size": Section("argent.config.experiment:TrainConfig", "partial_entries",
                             "argent.config.experiment:train_by_size_section"),
    "data": Section("argent.config.experiment:DataConfig"),
    "tracking": Section("argent.config.experiment:TrackingConfig"),
    "variant": Section("argent.config.variant:VariantConfig", "partial"),
    "variant_overrides": Section("argent.config.variant:VariantConfig", "partial_entries"),
    "evaluate": Section("argent.evaluation.config:EvaluateSection"),
    "benchmarks": Section("argent.evaluation.benchmarks:CommonOptions", "entries",
                          "argent.evaluation.benchmarks:benchmarks_section"),
    "clean": Section("argent.cleaning.config:CleanSection", "section", "argent.cleaning.config:clean_section"),
    "negatives": Section("argent.negatives.config:MiningConfig", "section", "argent.negatives.config:negatives_section"),
    "tune": Section("argent.tuning.config:TuneConfig", "section", "argent.tuning.config:tune_section"),
    "probe": Section("argent.probe.config:ProbeSection", "section", "argent.probe.config:probe_section"),
    "tables": Section("argent.tablespec.section:TablesSection", "section", "argent.tablespec.section:tables_section",
                      required=True),
    "groups": Section("argent.config.group_entries:GroupEntry", "entries", "argent.config.groups:groups_section",
                      required=True),
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


def section_of(raw: dict[str, Any], section: str) -> dict[str, Any]:
    """``raw[section]`` as a mapping (absent or null: empty, so every default applies)."""
    value = raw.get(section)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{section}: expected a mapping, got {value!r}")
    return value
