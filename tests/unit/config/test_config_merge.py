"""Every verb reads a config the way Snakemake does: a file given with ``--config`` is merged over
config/config.yaml (the Snakefile's ``configfile:``), so the shipped quick and smoke configs mean the
same to `argent check`, `tune` and `tables` as to `snakemake --configfile` and `argent plan`."""

from __future__ import annotations

import re

import pytest
from snakemake.common.configfile import load_configfile
from snakemake.utils import update_config

from argent.config import (
    ConfigError,
    WorkflowConfig,
    derive_paths,
    experiment_from_dict,
    load_config,
    load_merged_config,
)
from argent.config.groups import base_variant
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.tuning.config import load_tune
from tests.fixtures import ROOT

SHIPPED = ["quick.yaml", "smoke.yaml"]


def snakemakes_config(name: str) -> dict:
    """What ``snakemake --configfile config/<name>`` sees: its own reader and merge."""
    config = load_configfile(str(ROOT / "config" / "config.yaml"))
    update_config(config, load_configfile(str(ROOT / "config" / name)))
    return config


@pytest.mark.parametrize("name", SHIPPED)
def test_the_merge_is_snakemakes(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    expected = snakemakes_config(name)
    assert load_merged_config(f"config/{name}") == expected
    derived = derive_paths(expected)  # what the Snakefile fills in next, as every verb's load_config does
    assert merged_config(ROOT / "config" / name, [], ROOT) == derived  # argent plan
    assert load_tune(f"config/{name}")[1] == derived


@pytest.mark.parametrize("name", SHIPPED)
def test_check_passes_on_a_shipped_config(name, argent, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, err = argent("check", "--config", f"config/{name}")
    assert code == 0, err


@pytest.mark.parametrize("name", SHIPPED)
def test_tune_reads_a_shipped_config_merged(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    tune, _ = load_tune(f"config/{name}")
    assert tune.objective, "the default's objective, as Snakemake sees it"
    if name == "smoke.yaml":  # alone, smoke.yaml has no objective: the false error of before
        with pytest.raises(ConfigError, match="tune.objective"):
            load_tune(f"config/{name}", merge_default=False)


@pytest.mark.parametrize("name", SHIPPED)
def test_tables_reads_a_shipped_config_merged(name, argent, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    code, err = argent("tables", "--config", f"config/{name}", "--results", tmp_path / "empty")
    # merged: the groups resolve and the verb reaches its data (none here); before, smoke.yaml failed on its groups
    assert code == 2 and "no evaluation JSON" in err, err


def test_a_set_override_and_no_default(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = load_merged_config("config/quick.yaml", ["train.steps=7"])
    assert cfg["train"]["steps"] == 7 and cfg["runs"]["seeds"] == [0] and "optim" in cfg
    alone = load_merged_config("config/quick.yaml", merge_default=False)
    assert "optim" not in alone


# The published recipe (ARGENT §4 / HyCoCLIP): what every group of config/paper.yaml must resolve to
# once merged over the CPU default, whose hiershapes-specific choices (no augmentation, the decoded
# image cache, box area at 64 px) must not leak into a paper-scale run.
PAPER_RECIPE = {"data.augment": True, "data.format": "grounded", "data.min_box_area": 1024, "data.image_cache": "",
                "data.batching.mode": "stream", "train.batch_size": 768, "train.precision": "bf16",
                "optim.lr": 5.0e-4, "optim.warmup_steps": 4000, "optim.weight_decay": 0.2, "optim.schedule": "cosine"}
PAPER_STEPS = {"main": 500000, "ablations": 40000, "ablations_scale": 40000, "negatives": 40000, "tuning": 40000}


def test_paper_yaml_resolves_to_the_published_recipe_in_every_group(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    wordnet = tmp_path / "wordnet.zip"  # the negatives group checks that the file exists, nothing more
    wordnet.write_bytes(b"")
    cfg = load_config("config/paper.yaml", [f"negatives.wordnet_zip={wordnet}"]).raw
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    assert set(PAPER_STEPS) <= set(plan.configs), sorted(plan.configs)
    for key in plan.trained:
        exp = experiment_from_dict(plan.configs[key.group], base_variant(cfg, key.variant), key.size, key.seed,
                                   base_dir=ROOT)
        assert key.seed == 0, f"{key.group}/{key.variant}: seed {key.seed}; the papers report one run per cell"
        for dotted, expected in {**PAPER_RECIPE, "train.steps": PAPER_STEPS[key.group]}.items():
            value = exp
            for part in dotted.split("."):
                value = getattr(value, part)
            assert value == expected, f"{key.group}/{key.variant}-{key.size}: {dotted} = {value!r}, the paper's is {expected!r}"


@pytest.mark.parametrize("override, named", [
    ("train.steps=abc", "train.steps: expected an integer, got 'abc'"),
    ("nosuch.key=3", "unknown top-level section(s) ['nosuch']"),
    ("trainsteps", "tune.train_overrides[0]: override 'trainsteps': expected key.path=value"),
])
def test_a_bad_study_override_is_named_when_the_plan_is_built(monkeypatch, override, named):
    """Snakemake, `argent plan` and `argent check` build the plan: a trial's config is checked there,
    with the key named, not in a worker job after the first trials ran."""
    monkeypatch.chdir(ROOT)
    cfg = load_config("config/smoke.yaml", [f"tune.train_overrides=[{override}]"]).raw
    with pytest.raises(ConfigError, match=re.escape(named)):
        build_plan(WorkflowConfig(cfg), ROOT)
