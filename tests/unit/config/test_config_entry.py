"""One way in for config: every verb that reads the workflow config, fed the same file with one
mistyped section, refuses it in the same words (the key, and the allowed sections), without a
traceback and before any work."""

from pathlib import Path

import pytest
import yaml

from argent.cli import main as argent_main
from tests.fixtures import ROOT

TYPO = "unknown top-level section(s) ['trian']; allowed: ['variants_file', 'results',"


@pytest.fixture
def typo_config(tmp_path):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["variants_file"] = str(ROOT / "config" / "variants.yaml")
    cfg["trian"] = {"steps": 10}  # the typo
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _verbs(config: Path, tmp: Path) -> dict[str, list[str]]:
    c = ["--config", str(config)]
    return {
        "check": ["check", *c],
        "plan": ["plan", *c, "--no-default"],
        "train": ["train", *c, "--variant", "clip", "--size", "tiny", "--seed", "0", "--out", str(tmp / "run")],
        "tune": ["tune", *c, "--out", str(tmp / "tune")],
        "tables": ["tables", *c, "--results", str(tmp / "results")],
        "clean": ["clean", *c, "--csv", str(tmp / "x.csv"), "--out-dir", str(tmp / "clean")],
        "mine": ["mine", str(tmp / "x.tar"), *c, "--out", str(tmp / "n.parquet")],
        "probe": ["probe", *c, "--run", str(tmp / "run"), "--out", str(tmp / "p.json")],
        "evaluate": ["evaluate", "--run", str(tmp / "run"), "--benchmark", "hs_zeroshot", *c,
                     "--out-dir", str(tmp / "eval")],
    }


@pytest.mark.parametrize("verb", ["check", "plan", "train", "tune", "tables", "clean", "mine", "probe", "evaluate"])
def test_every_verb_names_the_mistyped_section_the_same_way(verb, typo_config, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = argent_main(_verbs(typo_config, tmp_path)[verb])
    err = capsys.readouterr().err
    assert code == 2, err
    assert TYPO in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("verb", ["plan", "train", "tables", "clean", "mine", "probe", "tune", "evaluate"])
def test_every_verb_names_a_mistyped_set_the_same_way(verb, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = _verbs(ROOT / "config" / "config.yaml", tmp_path)[verb]
    if verb == "plan":
        argv.remove("--no-default")
    code = argent_main([*argv, "--set", "trian.steps=3"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "trian" in err and "Traceback" not in err, err
