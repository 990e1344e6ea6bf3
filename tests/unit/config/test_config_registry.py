"""One config mechanism (docs/config.md): every top-level section typed by one dataclass in one registry
(``argent.config.registry.SECTIONS``), one default per key, the schema only patterns (no default, no key its type
lacks), the merge layers specific over general, and the two "How to add" recipes followed with the
number of edits the doc gives."""

from __future__ import annotations

import dataclasses
import re
import sys
import typing

import pytest
import yaml

import argent.config.experiment
from argent.config import (
    SECTIONS,
    ConfigError,
    ExperimentConfig,
    Section,
    WorkflowConfig,
    check_range,
    config_keys,
    experiment_from_dict,
    experiment_from_resolved,
    load_config,
    named,
    section_type,
    setting,
)
from argent.config.groups import group_config, groups_section
from argent.plan.groups import build_plan
from argent.runs import PINNED_FILE, load_pinned, missing_pins, pin_new
from argent.tablespec.section import tables_section
from tests.fixtures import ROOT

SCHEMA_FILE = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SHIPPED = ["config.yaml", "quick.yaml", "smoke.yaml", "paper.yaml"]


# ---- the registry ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_the_registry_types_every_section_of_the_shipped_configs(name):
    raw = yaml.safe_load((ROOT / "config" / name).read_text())
    assert set(raw) <= set(SECTIONS), f"config/{name}: a section the registry does not type"
    workflow = load_config(ROOT / "config" / name, base_dir=ROOT)
    workflow.check_all()
    for section in raw:
        workflow.section(section)


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_entry_names_a_dataclass_and_parses_its_defaults(section):
    spec = SECTIONS[section]
    cls = section_type(section)
    assert dataclasses.is_dataclass(cls)
    if spec.shape == "value":
        assert section in config_keys(cls)  # a top-level value is the type's field of its name
    if spec.parse:
        assert callable(named(spec.parse))
    if not spec.required and section != "tune":  # tune: a config without one is refused (argent tune)
        load_config(None).section(section)  # absent: every default


def test_required_sections_are_named_when_missing():
    with pytest.raises(ConfigError, match=r"tables\.main: required"):
        load_config(None).check_all()
    with pytest.raises(ConfigError, match=r"groups: missing or empty"):
        load_config(None).section("groups")
    with pytest.raises(ConfigError, match=r"^tables\.main: required"):
        tables_section({"tables": {"ablations": {}}})
    with pytest.raises(ConfigError, match=r"unknown top-level section\(s\) \['optimm'\]"):
        load_config(None, ["optimm.lr=1"]).check_all()


# ---- the schema: patterns only ---------------------------------------------------------------------


def _schema() -> dict:
    return yaml.safe_load(SCHEMA_FILE.read_text())


def _walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def _entry_type(tp):
    """X of ``dict[str, X]`` or ``list[X]``, else None."""
    args = typing.get_args(tp)
    return args[-1] if typing.get_origin(tp) in (dict, list) and args else None


def _keys_are_fields(block: dict, cls: type, where: str) -> None:
    hints, keys = typing.get_type_hints(cls), config_keys(cls)
    for key, sub in (block.get("properties") or {}).items():
        assert key in keys, f"schema {where}.{key}: not a key of {cls.__name__} (keys: {list(keys)})"
        tp = hints[keys[key]]
        if dataclasses.is_dataclass(tp):
            _keys_are_fields(sub, tp, f"{where}.{key}")
        elif dataclasses.is_dataclass(_entry_type(tp)) and isinstance(sub.get("additionalProperties"), dict):
            _keys_are_fields(sub["additionalProperties"], _entry_type(tp), f"{where}.{key}.<name>")


def test_the_schema_sets_no_default_and_declares_no_key_of_its_own():
    schema = _schema()
    for path, node in _walk(schema):
        assert "default" not in node, f"schema{path}: a default; the type's field owns it"
        assert node.get("additionalProperties", True) is not False, f"schema{path}: the type checks the keys"
        assert "required" not in node, f"schema{path}: the type (or its parser) requires keys"
    assert set(schema["properties"]) <= set(SECTIONS)
    for section, block in schema["properties"].items():
        spec, cls = SECTIONS[section], section_type(section)
        if spec.shape in ("section", "partial"):
            _keys_are_fields(block, cls, section)
        elif spec.shape in ("entries", "partial_entries") and isinstance(block.get("additionalProperties"), dict):
            _keys_are_fields(block["additionalProperties"], cls, f"{section}.<name>")
        elif spec.shape == "value":
            assert "properties" not in block


def test_the_rules_and_the_dag_take_defaults_from_the_types():
    """No rule passes a default of its own to a config read (the types' are the only ones)."""
    rules = [*sorted((ROOT / "workflow" / "rules").glob("*.smk")), ROOT / "workflow" / "Snakefile"]
    offenders = []
    for path in rules + [ROOT / "argent" / "plan" / "dag.py"]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if (re.search(r"(?<!def )run_resource\([^)]*,[^)]*,", line)
                    or re.search(r"config\[\"\w+\"\]\.get\(\"\w+\", ", line)):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "read the value with setting()/ARGENT_DAG.setting():\n" + "\n".join(offenders)


# ---- typed groups and tables -------------------------------------------------------------------------


def test_groups_take_their_sizes_and_seeds_from_the_typed_runs_section():
    cfg = {"groups": {"g": {"variants": ["clip"]}, "h": {"variants": ["meru"], "seeds": [4], "from": "g"}}}
    groups = groups_section(cfg)
    assert groups["g"].sizes == ["tiny"] and groups["g"].seeds == [0]  # RunsSection's defaults
    assert groups["h"].seeds == [4] and groups["h"].borrow_from == "g"
    groups = groups_section({**cfg, "runs": {"sizes": ["S"], "seeds": [1, 2]}})
    assert groups["g"].sizes == ["S"] and groups["g"].seeds == [1, 2]
    with pytest.raises(ConfigError, match=r"runs\.mem_mb: 10 is out of range; must be >= 100"):
        groups_section({**cfg, "runs": {"mem_mb": 10}})


def test_a_groups_runs_override_is_range_checked_on_the_merged_config():
    cfg = {"variants_file": str(ROOT / "config" / "variants.yaml"), "train": {"steps": 10}, "optim": {"warmup_steps": 1},
           "groups": {"g": {"variants": ["clip"], "overrides": {"runs": {"threads_per_run": 0}}}}}
    with pytest.raises(ConfigError, match=r"groups\.g \(the base config with its overrides\): runs\.threads_per_run: "
                                          r"0 is out of range; must be >= 1"):
        build_plan(WorkflowConfig(cfg), ROOT)


def test_tables_errors_name_the_key_path():
    good = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["tables"]
    assert tables_section({"tables": good}).claims.file == "config/claims.yaml"
    bad = {**good, "main": {**good["main"], "colums": []}}
    with pytest.raises(ConfigError, match=r"^tables\.main: unknown key\(s\) \['colums'\]; allowed: \['variants', "
                                          r"'columns', 'group'\]"):
        tables_section({"tables": bad})
    bad = {**good, "ablations": {**good["ablations"], "groups": [{"name": "(a)", "rows": [{"label": "x"}]}]}}
    with pytest.raises(ConfigError, match=r"^tables\.ablations\.groups\[0\]\.rows\[0\]\.variant: required"):
        tables_section({"tables": bad})
    bad = {**good, "claims": {"metrics": {"zeroshot": [{"benchmark": "b", "metric": "m", "scale": 0}]}}}
    with pytest.raises(ConfigError, match=r"^tables\.claims\.metrics\.zeroshot\[0\]\.scale: 0\.0 is out of range"):
        tables_section({"tables": bad})


# ---- the merge layers, specific over general -----------------------------------------------------------


def test_a_variants_own_overrides_beat_the_global_variant_section():
    cfg = {"variant": {"huber_beta": 0.5, "norm_reg_weight": 0.3},
           "variant_overrides": {"argent": {"huber_beta": 0.25}}}
    exp = experiment_from_dict(cfg, "argent", "tiny", 0, base_dir=ROOT)
    assert exp.variant.huber_beta == 0.25 and exp.variant.norm_reg_weight == 0.3
    # the most specific: a tuned best.yaml / a trial's fields
    exp = experiment_from_dict(cfg, "argent", "tiny", 0, base_dir=ROOT, variant_overrides={"huber_beta": 2.0})
    assert exp.variant.huber_beta == 2.0
    # another variant gets the global value
    other = experiment_from_dict(cfg, "meru_adaent", "tiny", 0, base_dir=ROOT).variant
    assert (other.huber_beta, other.norm_reg_weight) == (0.5, 0.3)


def test_size_and_group_layers_beat_the_general_ones():
    cfg = {"variants_file": str(ROOT / "config" / "variants.yaml"),
           "train": {"steps": 100, "batch_size": 8}, "train_by_size": {"tiny": {"steps": 50}},
           "model": {"tiny": {"embed_dim": 96}}, "optim": {"warmup_steps": 1},
           "groups": {"g": {"variants": ["clip"], "overrides": {"train": {"batch_size": 4}}}}}
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    gcfg = group_config(cfg, plan.groups["g"])
    exp = experiment_from_dict(gcfg, "clip", "tiny", 0, base_dir=ROOT)
    assert (exp.train.steps, exp.train.batch_size) == (50, 4)  # train_by_size over train; the group over the base
    assert exp.model.embed_dim == 96 and exp.model.vision_width == argent.config.experiment.MODEL_SIZES["tiny"]["vision_width"]


def test_the_doc_lists_every_section_and_every_merge_layer_it_names_exists():
    doc = (ROOT / "docs" / "config.md").read_text()
    for section in SECTIONS:
        assert f"| `{section}` |" in doc, f"docs/config.md: section {section} not in the table"
    for path in set(re.findall(r"`((?:argent|workflow|config|scripts)/[\w/.]+\.(?:py|yaml|smk|json))`", doc)):
        assert (ROOT / path).is_file() or (ROOT / path).parent.is_dir(), path


# ---- "How to add": a typed section, 2 edits ---------------------------------------------------------


MYSTAGE = '''
from dataclasses import dataclass, field
from argent.config import check_range


@dataclass
class MyStageSection:
    """``mystage:``: the options of a new stage."""

    rounds: int = 3  # how many rounds
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_range("rounds", self.rounds, low=1)
'''


def test_recipe_a_typed_section_is_its_dataclass_and_one_registry_line(tmp_path, monkeypatch):
    # edit 1: the dataclass, in the stage's module (here a temporary one)
    (tmp_path / "mystage_config.py").write_text(MYSTAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mystage_config", raising=False)
    # edit 2: one line in SECTIONS
    monkeypatch.setitem(SECTIONS, "mystage", Section("mystage_config:MyStageSection"))

    path = tmp_path / "workflow.yaml"
    path.write_text("mystage: {rounds: 5}\n")
    workflow = load_config(path, merge_default=False)
    assert workflow.section("mystage").rounds == 5 and workflow.section("mystage").names == []
    assert setting(workflow.raw, "mystage", "names") == [] and setting({}, "mystage", "rounds") == 3
    assert load_config(path, ["mystage.rounds=7"], merge_default=False).section("mystage").rounds == 7
    typo = rf"^{re.escape(str(path))} with --set: mystage: unknown key\(s\) \['round'\]; allowed: \['rounds', 'names'\]"
    with pytest.raises(ConfigError, match=typo):
        load_config(path, ["mystage.round=1"], merge_default=False).section("mystage")
    with pytest.raises(ConfigError, match=r"mystage\.rounds: 0 is out of range; must be >= 1"):
        load_config(path, ["mystage.rounds=0"], merge_default=False).section("mystage")
    # the shipped config with the new section: the DAG's check takes it, and the schema needs no edit
    shipped = load_config(ROOT / "config" / "config.yaml", ["mystage.rounds=2"], base_dir=ROOT)
    shipped.check_all()
    validate = pytest.importorskip("snakemake.utils").validate
    validate({**yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), "mystage": {"rounds": 2}},
             str(SCHEMA_FILE))


# ---- "How to add": a training option, 3 edits and 1 command --------------------------------------------


@dataclasses.dataclass
class OptimWithEps(argent.config.experiment.OptimConfig):
    """The recipe's edit 1 applied in memory: ``optim.eps``, its default (neutral: torch's AdamW
    default, the behaviour before the field) and its range."""

    eps: float = 1e-8  # AdamW's epsilon

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("eps", self.eps, low=0.0, low_open=True)


def test_recipe_a_training_option_is_a_field_its_use_and_its_doc_line(tmp_path, monkeypatch):
    before = experiment_from_dict({}, "argent", "tiny", 0, base_dir=ROOT).result_hash()
    monkeypatch.setattr(argent.config.experiment, "OptimConfig", OptimWithEps)

    # the default changes no run's identity (argent/runs/identity.py: a field newer than the pins is
    # compared with its current default)
    exp = experiment_from_dict({}, "argent", "tiny", 0, base_dir=ROOT)
    assert exp.optim.eps == 1e-8 and exp.result_hash() == before
    # set in the file, with --set, in a group's overrides: one value, one path
    path = tmp_path / "workflow.yaml"
    path.write_text(f"variants_file: {ROOT / 'config' / 'variants.yaml'}\noptim: {{eps: 1.0e-6}}\n")
    exp = load_config(path, merge_default=False, base_dir=ROOT).experiment("argent", "tiny", 0)
    assert exp.optim.eps == 1e-6 and exp.identity()["optim"] == {"eps": 1e-6} and exp.result_hash() != before
    assert load_config(path, ["optim.eps=1e-7"], merge_default=False, base_dir=ROOT).experiment(
        "argent", "tiny", 0).optim.eps == 1e-7
    cfg = {"variants_file": str(ROOT / "config" / "variants.yaml"), "train": {"steps": 10}, "optim": {"warmup_steps": 1},
           "groups": {"g": {"variants": ["clip"], "overrides": {"optim": {"eps": 1e-5}}}}}
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    assert experiment_from_dict(plan.configs["g"], "clip", "tiny", 0, base_dir=ROOT).optim.eps == 1e-5
    # its range and a typo, named by their path
    with pytest.raises(ConfigError, match=r"optim\.eps: 0\.0 is out of range; must be > 0"):
        load_config(path, ["optim.eps=0"], merge_default=False, base_dir=ROOT).experiment("argent", "tiny", 0)
    with pytest.raises(ConfigError, match=r"optim: unknown key\(s\) \['esp'\]; allowed: \[.*'eps'\]"):
        load_config(path, ["optim.esp=1"], merge_default=False, base_dir=ROOT).experiment("argent", "tiny", 0)
    # a run folder's resolved config reads back
    assert experiment_from_resolved(exp.to_dict()).optim.eps == 1e-6
    # the command of the recipe: the pin test fails until it is run, then the field is pinned
    assert missing_pins(ExperimentConfig, load_pinned()) == {"optim.eps": 1e-8}
    pins = tmp_path / "identity_defaults.json"
    pins.write_text(PINNED_FILE.read_text())
    assert pin_new(ExperimentConfig, pins) == ["optim.eps"]  # (it resets the pin cache: the real file is read next)
    assert not missing_pins(ExperimentConfig, yaml.safe_load(pins.read_text())["defaults"])
