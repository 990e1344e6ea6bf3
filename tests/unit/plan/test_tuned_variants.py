"""Tuned variants of several bases (argent/plan/groups.py, targets.py, dag.py, cost.py): ``<base>-tuned`` is the
best trial of the study that tunes ``<base>`` (``tune.base_variants``), trained as its base plus that study's
best.yaml; a listed ``X-tuned`` for an X no study tunes is refused in one line, at DAG build and by argent check."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from argent.check.preflight import PreflightError, preflight
from argent.check.runs import claim_run_problems
from argent.config import ConfigError, WorkflowConfig, load_config, load_variants
from argent.config.groups import RunKey, base_variant, run_experiment, tuned_base, tuned_study
from argent.plan.cost import group_costs
from argent.plan.dag import build_dag
from argent.plan.groups import build_plan
from argent.plan.targets import planned_hash
from argent.tablespec.claims import Claim, ClaimsSpec
from tests.fixtures import ROOT

TWO = {"base_variants": ["argent", "meru_adaent"]}


def _smoke(tmp_path: Path, tune: dict | None = None, tuned: list[str] | None = None) -> dict:
    """The smoke workflow config (WordNet present, results under tmp_path) tuning ``tune``'s bases and
    listing ``tuned`` in its tuning group."""
    cfg = load_config(ROOT / "config" / "smoke.yaml", [f"results={tmp_path / 'results'}"], base_dir=ROOT).raw
    cfg["negatives"]["wordnet_zip"] = str(ROOT / "pyproject.toml")
    cfg["tune"].update(tune or {})
    cfg["groups"]["tuning"]["variants"] = tuned or ["argent-tuned"]
    return cfg


def test_a_tuned_name_resolves_to_the_base_and_the_study_that_tune_it(tmp_path):
    cfg = _smoke(tmp_path, TWO)
    assert [tuned_base(cfg, v) for v in ("argent-tuned", "meru_adaent-tuned", "hycoclip-tuned", "argent")] == \
        ["argent", "meru_adaent", None, None]
    assert tuned_study(cfg, "argent-tuned") == "argent_weights"  # the first base keeps tune.study
    assert tuned_study(cfg, "meru_adaent-tuned") == "argent_weights-meru_adaent"
    assert base_variant(cfg, "meru_adaent-tuned") == "meru_adaent" and base_variant(cfg, "meru") == "meru"
    one = _smoke(tmp_path)  # the one-base section: only argent-tuned is a tuned variant
    assert tuned_base(one, "argent-tuned") == "argent" and tuned_base(one, "meru_adaent-tuned") is None


def test_each_tuned_variant_trains_as_its_base_and_is_never_borrowed(tmp_path):
    cfg = _smoke(tmp_path, TWO, ["argent-tuned", "meru_adaent-tuned"])
    cfg["groups"]["tuning"]["from"] = "ablations"
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    key = RunKey("tuning", "meru_adaent-tuned", "tiny", 0)
    assert plan.home[key] == key
    exp = run_experiment(plan.configs["tuning"], key, ROOT)
    base = run_experiment(plan.configs["tuning"], RunKey("tuning", "meru_adaent", "tiny", 0), ROOT)
    assert exp.variant_name == "meru_adaent-tuned" and exp.variant == base.variant


def test_a_listed_tuned_variant_of_a_base_no_study_tunes_is_refused_in_one_line(tmp_path):
    cfg = _smoke(tmp_path, {}, ["argent-tuned", "meru_adaent-tuned"])
    message = (r"groups.tuning: meru_adaent-tuned is the tuned meru_adaent, but no study tunes meru_adaent "
               r"\(tune.base_variants: \['argent'\]\); add meru_adaent to tune.base_variants")
    with pytest.raises(ConfigError, match=message) as err:
        build_dag(cfg, ROOT)
    assert "\n" not in str(err.value) and str(err.value).startswith("experiment groups: groups.tuning:")
    with pytest.raises(PreflightError, match=message):  # argent check: the same line among its problems
        preflight(cfg, ROOT)
    cfg["tune"].update(TWO)  # tuned, it plans
    assert RunKey("tuning", "meru_adaent-tuned", "tiny", 0) in build_dag(cfg, ROOT).plan.trained


def test_the_dag_runs_one_study_per_base_and_trains_each_tuned_variant_on_its_best(tmp_path):
    one = build_dag(_smoke(tmp_path), ROOT)
    dag = build_dag(_smoke(tmp_path, TWO, ["argent-tuned", "meru_adaent-tuned"]), ROOT)
    assert dag.studies() == {"argent_weights": "argent", "argent_weights-meru_adaent": "meru_adaent"}
    tune = Path(dag.setting("results")) / "tune"
    assert dag.tuned_inputs("tuning", "argent-tuned") == [str(tune / "argent_weights" / "best.yaml")]
    assert dag.tuned_inputs("tuning", "meru_adaent-tuned") == [str(tune / "argent_weights-meru_adaent" / "best.yaml")]
    assert dag.tuned_inputs("main", "argent") == []
    # the first study's workers keep the hash the one-base config gives them (no re-run); the second has its own
    assert dag.tune_hash("argent_weights") == one.tune_hash("argent_weights")
    assert dag.tune_hash("argent_weights-meru_adaent") != dag.tune_hash("argent_weights")
    with pytest.raises(ConfigError, match=r"tune: no study 'other' in this config"):
        dag.tune_hash("other")
    assert {str(tune / s / "trials.csv") for s in dag.studies()} <= set(dag.table_extras())
    assert dag.tune_config() == dag.group_config("tuning") and dag.tune_inputs("argent_weights-meru_adaent")
    # a study whose best no group retrains is said, once: its trials are in no cost line
    alone = build_dag(_smoke(tmp_path, TWO), ROOT)
    assert [n for n in alone.notes if "study" in n] == [
        "argent: study argent_weights-meru_adaent tunes meru_adaent (2 trials), but no active group retrains "
        "meru_adaent-tuned: its trials are in no cost line (list it in a group, or drop meru_adaent from "
        "tune.base_variants)"]


def test_the_run_identity_of_a_tuned_variant_reads_its_own_studys_best(tmp_path):
    cfg = _smoke(tmp_path, TWO, ["argent-tuned", "meru_adaent-tuned"])
    plan, results = build_plan(WorkflowConfig(cfg), ROOT), Path(cfg["results"])
    meru, argent = RunKey("tuning", "meru_adaent-tuned", "tiny", 0), RunKey("tuning", "argent-tuned", "tiny", 0)
    assert planned_hash(plan, meru, ROOT, results) is None  # no best.yaml yet: nothing to compare
    best = results / "tune" / "argent_weights-meru_adaent" / "best.yaml"
    best.parent.mkdir(parents=True)
    best.write_text(yaml.safe_dump({"variant": {"entailment_weight": 0.37}}))
    tuned = run_experiment(plan.configs["tuning"], meru, ROOT, {"entailment_weight": 0.37}).result_hash()
    assert planned_hash(plan, meru, ROOT, results) == tuned
    assert planned_hash(plan, argent, ROOT, results) is None  # argent-tuned's study wrote nothing


def test_the_cost_counts_one_study_per_tuned_variant(tmp_path):
    cfg = _smoke(tmp_path, TWO, ["argent-tuned", "meru_adaent-tuned"])
    cfg["cost"] = {"step_seconds": {"tiny": 0.5}}
    (tuning,) = [c for c in group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), ROOT), ROOT) if c.group == "tuning"]
    assert tuning.study_steps == 2 * 2 * 6  # 2 studies x tune.n_trials 2 x train.steps=6 (smoke's overrides)
    assert tuning.notes == ["studies: 2 × 2 trials × 6 steps"]
    assert tuning.hours() == pytest.approx((2 * 12 + 24) * 0.5 / 3600)  # two runs of 12 steps, the studies


def test_a_claim_may_name_a_tuned_variant_of_a_catalogue_base():
    catalogue = set(load_variants(ROOT / "config" / "variants.yaml"))

    def claims(a: str) -> ClaimsSpec:
        return ClaimsSpec([Claim("c", "src", "s", a, "meru_adaent", (), None, "note")])

    assert claim_run_problems(claims("tuning/meru_adaent-tuned"), catalogue) == []
    assert claim_run_problems(claims("tuning/meru_adatent-tuned"), catalogue)  # a typo stays one


def test_every_study_keeps_to_validation_data(tmp_path):
    cfg = _smoke(tmp_path, TWO, ["argent-tuned", "meru_adaent-tuned"])
    leak = copy.deepcopy(cfg)
    leak["tune"]["objective"] = [{"benchmark": "hs_zeroshot", "metric": "top1", "weight": 1.0}]
    with pytest.raises(ConfigError, match=r"benchmarks.hs_zeroshot is not a validation benchmark"):
        build_dag(leak, ROOT)
