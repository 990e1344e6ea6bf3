"""argent/tuning/config.py: ``tune.base_variants``, one study per base (the same space, objective, budget
and sampler seed), the first keeping ``tune.study``; ``argent tune --study`` picks a study's base."""

from __future__ import annotations

import dataclasses

import pytest

from argent.config import ConfigError
from argent.tuning.config import load_tune, parse_tune
from tests.fixtures import ROOT

OBJECTIVE = [{"benchmark": "hs_zeroshot_val", "metric": "top1", "weight": 1.0}]


def test_one_base_by_default_and_its_study_keeps_its_name():
    tune = parse_tune({"study": "weights", "base_variant": "meru_adaent", "objective": OBJECTIVE})
    assert tune.bases() == ["meru_adaent"]
    (name, study), = tune.studies().items()
    assert name == "weights" and study.base_variant == "meru_adaent" and study.study == "weights"
    assert study.fingerprint() == tune.fingerprint()  # a one-base study is the section as written


def test_each_base_gets_its_own_study_with_the_same_search():
    tune = parse_tune({"study": "weights", "base_variants": ["argent", "meru_adaent"], "n_trials": 7,
                       "sampler": {"seed": 3}, "objective": OBJECTIVE})
    assert tune.base_variant == "argent"  # the first base: what every reader of base_variant sees
    studies = tune.studies()
    assert list(studies) == ["weights", "weights-meru_adaent"]
    assert [s.base_variant for s in studies.values()] == ["argent", "meru_adaent"]
    first, second = (dataclasses.asdict(s) for s in studies.values())
    differ = {k for k in first if first[k] != second[k]}
    assert differ == {"study", "base_variant"}  # space, objective, n_trials, sampler seed, ... the same
    assert studies["weights-meru_adaent"].fingerprint()["base_variant"] == "meru_adaent"


@pytest.mark.parametrize("raw, message", [
    ({"base_variant": "hycoclip", "base_variants": ["argent", "meru_adaent"]},
     r"tune.base_variant: 'hycoclip' is not the first of tune.base_variants \['argent', 'meru_adaent'\]"),
    ({"base_variants": ["argent", "argent"]}, r"tune.base_variants: 'argent' is listed twice"),
    ({"base_variants": ["argent", "../x"]}, r"tune.base_variants\[1\]: '\.\./x' is not a valid name"),
])
def test_conflicting_or_bad_bases_are_refused_naming_the_key(raw, message):
    with pytest.raises(ConfigError, match=message):
        parse_tune({"study": "weights", "objective": OBJECTIVE, **raw})


def test_argent_tune_study_picks_the_base_of_the_shipped_studies():
    config = ROOT / "config" / "config.yaml"
    tune, _ = load_tune(config, [], "argent_weights-meru_adaent")
    assert (tune.study, tune.base_variant) == ("argent_weights-meru_adaent", "meru_adaent")
    tune, _ = load_tune(config)
    assert (tune.study, tune.base_variant) == ("argent_weights", "argent")
    tune, _ = load_tune(config, [], "mine")  # any other name: the first base's study, renamed (as before)
    assert (tune.study, tune.base_variant) == ("mine", "argent")
    tune, _ = load_tune(config, ["tune.base_variants=[]", "tune.base_variant=meru"])  # one base, as written
    assert (tune.study, tune.base_variant, tune.bases()) == ("argent_weights", "meru", ["meru"])
