"""The clean: section: one typed owner of its keys and defaults, checked like every other section."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from argent.cleaning.cli import main
from argent.cleaning.config import CleanSection, load_clean_section
from argent.config import ConfigError
from tests.fixtures import ROOT

SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def test_the_shipped_configs_parse() -> None:
    section = load_clean_section(ROOT / "config" / "config.yaml")
    assert section.keep == 522 and section.scorer == "text" and set(section.datasets) == {"hierarcaps", "hiershapes", "hiershapes_val"}
    assert load_clean_section(None) == CleanSection()
    # the real HierarCaps keeps ARGENT's 522; the embedded splits keep every unambiguous scene (10x test sets)
    assert {n: section.for_dataset(n).keep for n in section.datasets} == {
        "hierarcaps": 522, "hiershapes": "all", "hiershapes_val": "all"}


def test_a_data_set_may_carry_its_own_keep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = load_clean_section(None, ["clean.keep=3", "clean.datasets={a: {csv: d/a.csv, images: i, keep: 7}, "
                                        "b: {csv: d/b.csv, images: i}, c: {csv: d/c.csv, images: i, keep: all}}"])
    assert [section.for_dataset(n).keep for n in "abc"] == [7, 3, "all"]
    assert section.for_dataset("b") is section and section.keep == 3  # the section itself is not changed
    monkeypatch.chdir(tmp_path)
    assert section.dataset_of("d/a.csv") == "a" and section.dataset_of(tmp_path / "d" / "./c.csv") == "c"
    assert section.dataset_of("d/other.csv") is None
    with pytest.raises(ConfigError, match=r"no data set 'x'; known: \['a', 'b', 'c'\]"):
        section.for_dataset("x")
    with pytest.raises(ConfigError, match=r"clean\.datasets\.a\.keep: must be >= 0, 'all' or null"):
        load_clean_section(None, ["clean.datasets={a: {csv: a.csv, images: i, keep: -2}}"])
    with pytest.raises(ConfigError, match=r"clean\.datasets\.a\.keep"):
        load_clean_section(None, ["clean.datasets={a: {csv: a.csv, images: i, keep: most}}"])
    same = load_clean_section(None, ["clean.datasets={a: {csv: x.csv, images: i, keep: 7}, b: {csv: x.csv, images: j}}"])
    with pytest.raises(ConfigError, match="name one with --dataset"):
        same.dataset_of("x.csv")
    # the schema Snakemake validates with lets the key through (the type checks its value)
    entry = SCHEMA["properties"]["clean"]["properties"]["datasets"]["additionalProperties"]
    assert entry.get("additionalProperties", True) is not False and "keep" not in entry.get("properties", {})


def test_the_verb_cleans_with_the_data_sets_own_keep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    """`argent clean` finds its data set by --csv (the workflow rule passes that entry's csv), or by
    --dataset; a CSV of no entry is cleaned with the section's options."""
    seen = []

    def fake_run(job):
        seen.append(job.config.keep)
        return {"counts": {"kept": 0, "samples": 0, "rows": 0, "reasons": {}}, "thresholds": {"alignment_of_last_kept": None},
                "pool": {k: 0 for k in ("size", "pool_degree_min", "pool_degree_max", "all_degree_min", "all_degree_max")}}

    monkeypatch.setattr("argent.cleaning.run.run", fake_run)  # the verb imports it after parsing its arguments
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text("clean:\n  keep: 522\n  datasets:\n    real: {csv: ../real/test.csv, images: r}\n"
                      "    embedded: {csv: data/hs/test.csv, images: i, keep: all}\n")
    out = ["--out-dir", str(tmp_path / "out"), "--config", str(config)]
    assert main(["--csv", "data/hs/test.csv", *out]) == 0
    assert main(["--csv", str(tmp_path / "data" / "hs" / "test.csv"), *out]) == 0  # the same file, spelled otherwise
    assert main(["--csv", "../real/test.csv", *out]) == 0
    assert main(["--csv", "elsewhere.csv", *out]) == 0
    assert main(["--csv", "elsewhere.csv", "--dataset", "embedded", *out]) == 0
    assert seen == ["all", "all", 522, 522, "all"]
    assert main(["--csv", "elsewhere.csv", "--dataset", "nope", *out]) == 2
    assert "no data set 'nope'" in capsys.readouterr().err


def test_a_mistyped_key_names_its_full_path_and_the_allowed_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("clean:\n  pool_sise: 5\n")
    with pytest.raises(ConfigError) as err:
        load_clean_section(config)
    message = str(err.value)
    assert str(config) in message and "clean" in message and "pool_sise" in message
    assert all(f.name in message for f in dataclasses.fields(CleanSection))
    with pytest.raises(ConfigError, match=r"clean\.datasets\.x: unknown key\(s\) \['image'\]; allowed: \['csv', 'images', 'keep'\]"):
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
