"""Every verb reads a config the way Snakemake does: a file given with ``--config`` is merged over
config/config.yaml (the Snakefile's ``configfile:``), so the shipped quick and smoke configs mean the
same to `argent check`, `tune` and `tables` as to `snakemake --configfile` and `argent plan`."""

from __future__ import annotations

import pytest
from snakemake.common.configfile import load_configfile
from snakemake.utils import update_config

from argent.plan.cli import merged_config
from argent.tuning.config import load_tune
from argent.typed import ConfigError, load_merged_config

from .conftest import ROOT

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
    assert merged_config(ROOT / "config" / name, [], ROOT) == expected  # argent plan
    assert load_tune(f"config/{name}")[1] == expected


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
