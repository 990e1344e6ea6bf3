"""Typed config: the catalogue resolves, bad keys name their path, names are safe for paths."""

import pytest

from argent.config import (
    ConfigError,
    check_name,
    experiment_from_dict,
    load_variants,
    variant_from,
)
from tests.fixtures import ROOT

CATALOGUE = ROOT / "config" / "variants.yaml"


def test_catalogue_has_the_four_families_and_table3_ablations():
    cat = load_variants(CATALOGUE)
    for name in ("clip", "meru", "hycoclip", "argent", "meru_adaent", "hycoclip_adaent_none",
                 "hycoclip_adaent_any", "argent_noreg"):
        assert name in cat
    argent = variant_from(cat, "argent")
    assert (argent.entailment, argent.adaptive_weight, argent.norm_reg_weight) == ("adaptive", "intra", 0.1)
    assert argent.use_boxes and len(argent.entailment_pairs) == 4  # inherited from hycoclip
    assert variant_from(cat, "hycoclip_adaent_any").adaptive_weight == "any"
    assert variant_from(cat, "clip").geometry == "euclidean"


def test_unknown_key_names_its_path():
    cat = load_variants(CATALOGUE)
    with pytest.raises(ConfigError, match=r"variants\.argent.*huber_bta"):
        variant_from(cat, "argent", {"huber_bta": 2.0})
    with pytest.raises(ConfigError, match=r"adaptive_weight.*allowed"):
        variant_from(cat, "argent", {"adaptive_weight": "sometimes"})


def test_wrong_type_names_its_path():
    with pytest.raises(ConfigError, match=r"train\.steps: expected an integer"):
        experiment_from_dict({"train": {"steps": "ten"}}, "clip", "tiny", 0, base_dir=ROOT)
    with pytest.raises(ConfigError, match=r"optim\.lr: expected a number"):
        experiment_from_dict({"optim": {"lr": [1]}}, "clip", "tiny", 0, base_dir=ROOT)


def test_box_pairs_need_boxes():
    cat = load_variants(CATALOGUE)
    with pytest.raises(ConfigError, match="use_boxes"):
        variant_from(cat, "meru", {"entailment_pairs": ["crop_image"]})


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "a..b"])
def test_names_used_in_paths_are_validated(bad):
    with pytest.raises(ConfigError):
        check_name(bad, "variant")
    assert check_name("argent-tuned", "variant") == "argent-tuned"
    with pytest.raises(ConfigError):
        check_name("ti-ny", "size")


def test_result_hash_ignores_logging_but_not_results():
    a = experiment_from_dict({}, "argent", "tiny", 0, base_dir=ROOT)
    b = experiment_from_dict({"train": {"log_every": 7}}, "argent", "tiny", 0, base_dir=ROOT)
    c = experiment_from_dict({"variant": {"huber_beta": 0.5}}, "argent", "tiny", 0, base_dir=ROOT)
    d = experiment_from_dict({}, "argent", "tiny", 1, base_dir=ROOT)
    assert a.result_hash() == b.result_hash()
    assert len({a.result_hash(), c.result_hash(), d.result_hash()}) == 3
