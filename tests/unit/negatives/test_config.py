"""The negatives: section: MiningConfig owns its keys and defaults; the workflow schema only lists them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError
from argent.negatives.cli import main
from argent.negatives.config import MODES, MiningConfig, load_negatives_section
from tests.fixtures import ROOT

SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def test_the_workflow_modes_come_from_the_config_file_not_the_schema() -> None:
    assert MiningConfig().modes == list(MODES)  # argent mine alone: every mode
    section = load_negatives_section(ROOT / "config" / "config.yaml")
    assert section.modes == ["concrete", "random"] and section.wordnet_zip.endswith(".zip")


def test_a_mistyped_key_names_its_full_path_and_the_allowed_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("negatives:\n  topk: 1\n")
    with pytest.raises(ConfigError) as err:
        load_negatives_section(config)
    message = str(err.value)
    assert str(config) in message and "negatives: unknown key(s) ['topk']; allowed: [" in message
    assert all(f.name in message for f in dataclasses.fields(MiningConfig))


def test_a_wrong_type_names_the_path_the_value_and_the_type() -> None:
    with pytest.raises(ConfigError, match=r"negatives\.top_k: expected an integer, got 'one'"):
        load_negatives_section(None, ["negatives.top_k=one"])
    with pytest.raises(ConfigError, match="reads only the negatives: section"):
        load_negatives_section(None, ["top_k=1"])


def test_the_verb_reports_a_config_error_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main([str(tmp_path / "caps.csv"), "--out", str(tmp_path / "x.parquet"), "--set", "negatives.topk=1"])
    err = capsys.readouterr().err
    assert code == 2 and "negatives: unknown key(s) ['topk']" in err and "Traceback" not in err
    assert not (tmp_path / "x.parquet").exists()
