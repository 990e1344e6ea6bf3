"""A key repeated in one YAML mapping is an error naming the file and line, in every config read: the
workflow config (every verb, `--set`, Snakemake's own `configfile:`), the variants file, the claims
file, a `--variant-file`. PyYAML alone keeps the last one silently."""

from __future__ import annotations

import pytest

from argent.config import ConfigError, WorkflowConfig, load_variants, load_workflow_config, strict_yaml
from argent.tables.run import TablesOptions, read_claims
from tests.fixtures import ROOT, write_config


def test_a_repeated_section_names_file_and_line(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    config.write_text(config.read_text() + "train:\n  steps: 12\n")  # a second train: section at the end
    line = config.read_text().splitlines().index("train:") + 1
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", tmp_path / "r")
    assert code == 2 and "Traceback" not in err
    assert f"{config}:{len(config.read_text().splitlines()) - 1}: duplicate key 'train' (first at line {line})" in err
    assert not (tmp_path / "r").exists()


def test_a_repeated_key_in_a_flow_mapping_and_in_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("results: r\ntrain: {steps: 12, steps: 2}\n")
    with pytest.raises(ConfigError, match=rf"{path}:2: duplicate key 'steps'"):
        load_workflow_config(path)
    path.write_text("results: r\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'steps'"):
        load_workflow_config(path, ["train={steps: 1, steps: 2}"])


def test_merge_keys_may_still_be_overridden():
    data = strict_yaml("base: &b {steps: 1, lr: 2}\nrun:\n  <<: *b\n  steps: 3\n", "x.yaml")
    assert data["run"] == {"steps": 3, "lr": 2}


def test_a_repeated_variant_names_the_variants_file(tmp_path):
    variants = tmp_path / "variants.yaml"
    variants.write_text((ROOT / "config" / "variants.yaml").read_text() + "meru:\n  cone_k: 0.2\n")
    with pytest.raises(ConfigError, match=rf"{variants}:\d+: duplicate key 'meru'"):
        load_variants(variants)


def test_a_repeated_key_in_the_claims_file(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text((ROOT / "config" / "claims.yaml").read_text() + "alpha: 0.1\n")
    with pytest.raises(ConfigError, match=rf"{claims}:\d+: duplicate key 'alpha'"):
        read_claims(TablesOptions(WorkflowConfig({"tables": {}}), claims_file=claims))


def test_a_repeated_key_in_a_variant_file(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    best = tmp_path / "best.yaml"
    best.write_text("variant:\n  cone_k: 0.2\n  cone_k: 0.3\n")
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", tmp_path / "r",
                       "--variant-file", best)
    assert code == 2 and f"{best}:3: duplicate key 'cone_k'" in err and "Traceback" not in err
