"""The clean: section: one typed owner of its keys and defaults, checked like every other section."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from argent.cleaning.cli import main
from argent.cleaning.config import CleanSection, load_clean_section
from argent.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def test_the_shipped_configs_parse() -> None:
    section = load_clean_section(ROOT / "config" / "config.yaml")
    assert section.keep == 522 and section.scorer == "text" and set(section.datasets) == {"hierarcaps", "hiershapes", "hiershapes_val"}
    assert load_clean_section(None) == CleanSection()


def test_a_mistyped_key_names_its_full_path_and_the_allowed_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("clean:\n  pool_sise: 5\n")
    with pytest.raises(ConfigError) as err:
        load_clean_section(config)
    message = str(err.value)
    assert str(config) in message and "clean" in message and "pool_sise" in message
    assert all(f.name in message for f in dataclasses.fields(CleanSection))
    with pytest.raises(ConfigError, match=r"clean\.datasets\.x: unknown key\(s\) \['image'\]; allowed: \['csv', 'images'\]"):
        load_clean_section(None, ["clean.datasets.x={csv: a.csv, image: b}"])


def test_a_wrong_type_names_the_path_the_value_and_the_type() -> None:
    with pytest.raises(ConfigError, match=r"clean\.degree_k: expected an integer, got 'ten'"):
        load_clean_section(None, ["clean.degree_k=ten"])
    with pytest.raises(ConfigError, match=r"clean\.table1_ks\[1\]: expected an integer"):
        load_clean_section(None, ["clean.table1_ks=[0, x]"])
    with pytest.raises(ConfigError, match=r"clean\.keep: must be >= 0"):
        load_clean_section(None, ["clean.keep=-1"])


def test_overrides_apply_and_stay_in_the_section() -> None:
    section = load_clean_section(ROOT / "config" / "config.yaml", ["clean.keep=all", "clean.min_alignment=0.5"])
    assert section.keep_count is None and section.min_alignment == 0.5
    assert load_clean_section(None, ["clean.min_alignment=null"]).min_alignment is None
    with pytest.raises(ConfigError, match="reads only the clean: section"):
        load_clean_section(None, ["train.steps=3"])


def test_the_verb_reports_a_config_error_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["--csv", str(tmp_path / "x.csv"), "--out-dir", str(tmp_path / "out"), "--set", "clean.kep=3"])
    err = capsys.readouterr().err
    assert code == 2 and "clean: unknown key(s) ['kep']; allowed: [" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
