"""What a verdict needs besides its test (issue 51), end to end through `argent tables` on synthetic
evaluation JSON and trainer logs: a decided row whose unclamped ranking has the other sign is
protocol-sensitive, a claim whose premise is absent on both arms is premise absent, a metric tied on
both arms gives no directional verdict; each a row that 771919c's tables called *contradicted* or
*reproduced*."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from argent.config import ConfigError, WorkflowConfig
from argent.tables.protocol_card import best_value, tie_share_key
from argent.tables.run import TablesOptions, run
from argent.tablespec.claims import load_claims
from tests.fixtures import MARGINS, claims_config

SEEDS = range(4)
RANKING_MARGINS = {**MARGINS, "pep_auc_ranking": {"delta": 0.5, "why": "test"}}
SENSITIVITY = {"pep_auc": {"role": "pep_auc_ranking", "why": "the clamp ties pairs beyond π/2"}}
DEGENERATE = {"tied_above": 0.5, "why": "most of the AUC is the ties' half credit"}
PREMISES = {"collapse": {"quantity": "collapse/text", "above": 0.5, "source": "“as parent embeddings contract toward the origin, "
           "their entailment cones widen toward a half-space” (abstract)", "why": "the median parent collapsed"}}


def _write(results: Path, arms: dict[str, dict[int, dict]], collapse: dict[str, float] | None = None) -> None:
    """hs_pep JSON per arm and seed; optionally the trainer's end-of-training collapse share per arm."""
    for variant, seeds in arms.items():
        for seed, metrics in seeds.items():
            path = results / "eval" / "main" / f"{variant}-tiny" / f"seed{seed}" / "hs_pep.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"benchmark": "hs_pep", "metrics": metrics}))
            if collapse is not None:
                run_dir = results / "runs" / "main" / f"{variant}-tiny" / f"seed{seed}"
                run_dir.mkdir(parents=True, exist_ok=True)
                record = {"step": 600, "diag/collapse/text": collapse[variant] + 0.01 * seed, "curv": 1.0}
                (run_dir / "metrics.jsonl").write_text(json.dumps(record) + "\n")


def _pep(auc: float, raw: float, tied: float) -> dict:
    return {"auc": auc, "ap": auc, "raw_auc": raw, "tied_share": tied,
            **{f"inside_share_L{k}": 1 - tied for k in range(1, 5)}}


def _tables(tmp_path: Path, claims: dict, arms: dict, collapse: dict | None = None) -> pl.DataFrame:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(claims, allow_unicode=True))
    cfg = claims_config(path)
    cfg["tables"]["claims"]["metrics"]["pep_auc_ranking"] = [{"benchmark": "hs_pep", "metric": "raw_auc", "scale": 100}]
    cfg["benchmarks"] = {"hs_pep": {"protocol": "pep", "hierarcaps_csv": "data/hiershapes/hierarcaps/test.csv"}}
    cfg["hiershapes"] = {"out": "data/hiershapes"}   # hs_pep is in the training domain
    cfg["data"] = {"train_shards": "data/hiershapes/train/shard-*.tar"}
    cfg["runs"]["seeds"] = list(SEEDS)
    results = tmp_path / "results"
    _write(results, arms, collapse)
    run(TablesOptions(WorkflowConfig(cfg), results))
    return pl.read_csv(results / "tables" / "claims.csv")


def _claims(premise: str | dict | None = None) -> dict:
    claim = {"id": "adaent-vs-cone", "source": "T3a", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
             "metrics": {"pep_auc": {"expect": "better", "published": [97.3, 94.6]}}}
    if premise is not None:
        claim["premise"] = premise
    return {"margins": RANKING_MARGINS, "sensitivity": SENSITIVITY, "degenerate": DEGENERATE, "premises": PREMISES,
            "claims": [claim]}


def _arms(a_auc: float, b_auc: float, a_raw: float, b_raw: float, a_tied: float, b_tied: float) -> dict:
    rng = np.random.default_rng(0)
    arms: dict[str, dict[int, dict]] = {"argent": {}, "hycoclip": {}}
    for seed in SEEDS:
        shared = rng.normal(0, 0.005)
        arms["argent"][seed] = _pep(a_auc + shared + rng.normal(0, 0.002), a_raw + shared + rng.normal(0, 0.001), a_tied)
        arms["hycoclip"][seed] = _pep(b_auc + shared + rng.normal(0, 0.002), b_raw + shared + rng.normal(0, 0.001), b_tied)
    return arms


def test_a_decided_row_whose_ranking_has_the_other_sign_is_protocol_sensitive(tmp_path):
    # Clamped AUC: A 15 points under B on every seed (a decided "contradicted" on its own test);
    # the unclamped ranking: A 2 points over B on every seed.
    rows = _tables(tmp_path, _claims(), _arms(0.70, 0.85, 0.97, 0.95, 0.30, 0.20))
    primary = rows.filter(pl.col("family") == "primary").to_dicts()[0]
    assert primary["test_verdict"] == "contradicted"
    assert primary["verdict"] == "protocol-sensitive"
    assert "other sign" in primary["note"]
    ranking = rows.filter(pl.col("role") == "pep_auc_ranking").to_dicts()[0]
    assert ranking["family"] == "exploratory" and ranking["sensitivity_of"] == "pep_auc"
    assert ranking["metric"] == "raw_auc" and ranking["diff_mean"] > 0
    assert ranking["verdict"] == "reproduced"   # the ranking, on its own, sides with the source


def test_the_same_sign_on_both_rankings_keeps_the_verdict(tmp_path):
    rows = _tables(tmp_path, _claims(), _arms(0.90, 0.85, 0.97, 0.95, 0.10, 0.20))
    primary = rows.filter(pl.col("family") == "primary").to_dicts()[0]
    assert primary["verdict"] == primary["test_verdict"] == "reproduced"


def test_a_metric_tied_on_both_arms_gives_no_directional_verdict(tmp_path):
    # 97 % and 90 % of the comparisons tied at the clamp: the clamped AUC counts positives that leave
    # the tie. Both rankings agree here, so only the tie rule can withhold the verdict.
    rows = _tables(tmp_path, _claims(), _arms(0.60, 0.66, 0.94, 0.97, 0.97, 0.90))
    primary = rows.filter(pl.col("family") == "primary").to_dicts()[0]
    assert primary["test_verdict"] == "contradicted"
    assert primary["verdict"] == "metric degenerate"
    assert primary["tied_a"] == pytest.approx(0.97) and primary["tied_b"] == pytest.approx(0.90)
    assert "tied" in primary["card"] and "over the declared 50 %" in primary["note"]
    # One arm that ranks is enough for a verdict.
    rows = _tables(tmp_path / "one", _claims(), _arms(0.60, 0.66, 0.94, 0.97, 0.97, 0.40))
    assert rows.filter(pl.col("family") == "primary")["verdict"].to_list() == ["contradicted"]


def test_a_claim_whose_premise_is_absent_on_both_arms_says_so(tmp_path):
    rows = _tables(tmp_path, _claims("collapse"), _arms(0.70, 0.85, 0.95, 0.97, 0.30, 0.20),
                   collapse={"argent": 0.02, "hycoclip": 0.10})
    for row in rows.filter(pl.col("family") != "").to_dicts():   # the primary row and its sensitivity row
        assert row["verdict"] == "premise absent", row
        assert row["test_verdict"] in ("contradicted", "reproduced")
        assert row["premise_b"] == pytest.approx(0.115) and row["premise"].startswith("collapse: collapse/text A 0.035")
        assert "present at ≥ 0.5" in row["premise"]
    # Present on one arm (the cone arm collapsed): the row is a test of the mechanism.
    rows = _tables(tmp_path / "present", _claims("collapse"), _arms(0.70, 0.85, 0.95, 0.97, 0.30, 0.20),
                   collapse={"argent": 0.02, "hycoclip": 0.70})
    assert rows.filter(pl.col("family") == "primary")["verdict"].to_list() == ["contradicted"]


def test_a_control_without_a_stated_direction_differs(tmp_path):
    claims = _claims()
    claims["claims"][0].update(primary="none", note="a control: the source states no direction",
                               metrics={"pep_auc": {"expect": "none"}})
    rows = _tables(tmp_path, claims, _arms(0.90, 0.85, 0.97, 0.95, 0.10, 0.20))
    declared = rows.filter(pl.col("role") == "pep_auc").to_dicts()[0]
    assert declared["test"] == "difference" and declared["expected_sign"] == 0
    assert declared["verdict"] == "differs" and declared["diff_mean"] > 0


@pytest.mark.parametrize("bad, message", [
    ({"sensitivity": {"pep_auc": {"role": "nowhere", "why": "x"}}}, "has no margin"),
    ({"degenerate": {"tied_above": 1.5, "why": "x"}}, "share in (0, 1)"),
    ({"claims": [{"premise": "no-such-premise"}]}, "premise"),
    ({"premises": {"collapse": {"quantity": "collapse/text", "above": 0.5}}}, "premises"),
])
def test_the_declarations_are_checked_naming_the_key(tmp_path, bad, message):
    claims = _claims()
    for key, value in bad.items():
        if key == "claims":
            claims["claims"][0].update(value[0])
        else:
            claims[key] = value
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(claims, allow_unicode=True))
    with pytest.raises(ConfigError, match="premise|" + message.replace("(", r"\(").replace(")", r"\)")):
        load_claims(path)


def test_what_the_card_measures():
    assert tie_share_key("pep", "auc") == "tied_share" and tie_share_key("pep", "ap_L3") == "tied_share_L3"
    assert tie_share_key("pep", "raw_auc") is None and tie_share_key("zeroshot", "top1") is None
    assert best_value("zeroshot", "top1", False) == 1.0 and best_value("zeroshot", "tie", True) == 0.0
    assert best_value("hierarcaps", "kendall_tau", False) is None
