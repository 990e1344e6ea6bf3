"""The probe's section (``probe:``, argent.probe.config) and its concept names (argent.probe.run):
range checks, errors that name the key, the file with ``--set`` overrides, the names files."""

from __future__ import annotations

from pathlib import Path

import pytest

from argent.config import ConfigError
from argent.probe import run as probe_run
from argent.probe.config import ProbeOptions, load_probe_section
from tests.fixtures import ROOT, probe_hierarchy


@pytest.fixture(scope="module")
def hier():
    return probe_hierarchy()


def test_config_check():
    for bad in (dict(ablations=["sideways"]), dict(levels=[120]), dict(seeds=[]),
                dict(train_fraction=0.99, val_fraction=0.05), dict(image_features="pixels"), dict(batch_size=0),
                dict(warmup=1.0), dict(lr=0.0)):
        with pytest.raises(ConfigError):
            ProbeOptions(**bad)


@pytest.mark.parametrize("section, message", [
    ("options: {learning_rate: 0.1}", "probe.options: unknown key(s) ['learning_rate']; allowed: ['seeds', 'ablations'"),
    ("colour: red", "probe: unknown key(s) ['colour']; allowed: ['enabled', 'variants', 'seeds', 'sizes', 'data', 'options']"),
    ("options: {epochs: five}", "probe.options.epochs: expected an integer, got 'five'"),
    ("options: {lr: fast}", "probe.options.lr: expected a number, got 'fast'"),
    ("options: {ablations: [sideways]}", "probe.options.ablations[0]: 'sideways' is not allowed; allowed: ['random', 'systematic']"),
    ("options: {levels: [0, 120]}", "probe.options.levels: [120.0] outside [0, 100]"),
    ("options: {batch_size: 0}", "probe.options.batch_size: must be >= 1, got 0"),
])
def test_config_errors_name_the_key(tmp_path: Path, section: str, message: str):
    path = tmp_path / "config.yaml"
    path.write_text(f"probe:\n  {section}\n")
    with pytest.raises(ConfigError) as err:
        load_probe_section(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_config_from_file_and_overrides(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text("probe:\n  data: imgs\n  options:\n    seeds: [1, 2]\n    levels: [0, 50]\n    epochs: 3\n"
                    "tune: {x: 1}\n")
    section = load_probe_section(path, ["probe.options.epochs=2", "probe.options.lr=2e-3"])
    opts = section.options
    assert section.data == "imgs" and opts.seeds == [1, 2] and opts.levels == [0.0, 50.0]
    assert opts.epochs == 2 and opts.lr == 2e-3  # --set wins over the file
    assert opts.batch_size == 16 and opts.warmup == 0.03 and opts.grad_clip == 1.0  # defaults fill the rest
    assert load_probe_section(None).options == ProbeOptions()
    with pytest.raises(ConfigError, match=r"probe\.<key>"):
        load_probe_section(path, ["train.steps=3"])  # the probe reads no other section: refused, not ignored
    with pytest.raises(ConfigError, match="probe.options.epochs: expected an integer"):
        load_probe_section(path, ["probe.options.epochs=x"])
    for name in ("config.yaml", "smoke.yaml", "paper.yaml"):  # the shipped configs parse
        load_probe_section(ROOT / "config" / name)


def test_read_concept_names(tmp_path: Path):
    plain = tmp_path / "names.tsv"
    plain.write_text("n1\tsquare\nn2\tregular polygon\n")
    table = tmp_path / "table.tsv"
    table.write_text("# comment\nwnid\tparent\tsynset\tname\tkind\nn3\t-\tx.n.01\tplane figure\tnode\n")
    assert probe_run.read_concept_names(plain) == {"n1": "square", "n2": "regular polygon"}
    assert probe_run.read_concept_names(table) == {"n3": "plane figure"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("n1 square\n")
    with pytest.raises(ValueError, match="bad.tsv:1"):
        probe_run.read_concept_names(bad)


def test_concept_names_resolution(hier, tmp_path: Path):
    leaf_names = {leaf: leaf.upper() for leaf in hier.leaves}
    with pytest.raises(ValueError, match="--names"):
        probe_run._resolve_names(hier, leaf_names, [])  # hypernyms A, A1, B have no name anywhere
    extra = tmp_path / "hyp.tsv"
    extra.write_text("A\tanimal\nA1\tbird\nB\tvehicle\n")
    names = probe_run._resolve_names(hier, leaf_names, [extra])
    assert names["A1"] == "bird" and names["a1"] == "A1"
