"""One prefix per message: the verb's name once (argent/cli.py adds it), the file once (the loader adds
it); a key that is no section names how to set a nested key, for a file and for Snakemake's --config."""

from __future__ import annotations

from pathlib import Path

import pytest

from argent.cli import main as argent_main
from argent.config import ConfigError, WorkflowConfig, check_sections, check_snakemake_config, load_config
from tests.fixtures import ROOT


def test_the_dag_builds_check_names_config_once() -> None:
    with pytest.raises(ConfigError) as err:
        WorkflowConfig({"bogus": 1}, "config", ROOT).check_all()  # as argent.plan.dag.build_dag does
    assert str(err.value).startswith("config: unknown top-level section(s) ['bogus']")
    assert "config: config:" not in str(err.value)


def test_a_verb_names_itself_and_the_file_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("bogus: 1\n")
    assert argent_main(["plan", "--config", str(config), "--no-default"]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"argent plan: {config}: unknown top-level section(s) ['bogus']")
    assert first.count("argent plan:") == 1 and first.count(f"{config}:") == 1
    with pytest.raises(ConfigError) as err:
        load_config(config, merge_default=False).check_all()
    assert str(err.value).count(f"{config}:") == 1


def test_a_dotted_top_level_key_says_how_to_nest_it() -> None:
    with pytest.raises(ConfigError) as err:
        check_sections({"train.steps": 10})
    message = str(err.value)
    assert "'train.steps' is one key with a dot in its name" in message
    assert "`train: {steps: ...}`" in message and "--set train.steps=VALUE" in message
    with pytest.raises(ConfigError) as err:
        check_sections({"trian": {}})
    assert "dot" not in str(err.value)  # a plain typo: the allowed sections only


def test_a_snakemake_command_line_key_that_is_no_section_is_one_line() -> None:
    config = {"results": "r", "steps": "10"}
    with pytest.raises(ConfigError) as err:
        check_snakemake_config(config, {"steps": "10"})
    message = str(err.value)
    assert "\n" not in message and message.startswith("snakemake --config steps=...: not a top-level section")
    assert "--configfile FILE" in message and "argent's --set train.steps=10" in message
    check_snakemake_config({"results": "r", "train": {"steps": 10}}, {"results": "r"})  # a section: fine
    with pytest.raises(ConfigError, match="unknown top-level section"):
        check_snakemake_config({"trian": {}}, {})  # a typo in a file: the sections' own check
