"""The claims table's families and tests, end to end through `argent tables` on synthetic evaluation
JSON: primary rows at Holm, exploratory rows at BH, equivalence by TOST on per-item scores, the
out-of-domain rows without a verdict, and a pair of runs tested twice refused."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from scipy import stats as scipy_stats

from argent.config import WorkflowConfig
from argent.tables.multiplicity import benjamini_hochberg, holm
from argent.tables.run import TablesOptions, run
from tests.fixtures import EVAL, GROUP_OF, MARGINS, claims_config, write_eval_results

N_ITEMS = 120


def _items_json(path: Path, bench: str, metric: str, values: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = [f"item{i:03d}" for i in range(len(values))]
    path.write_text(json.dumps({"benchmark": bench, "metrics": {metric: float(np.mean(values))},
                                "items": {metric: {"ids": ids, "values": [float(v) for v in values]}}}))


def _write_item_results(results: Path) -> None:
    """hs_retrieval: argent = hycoclip ± tiny noise per item (equivalent); hs_sugarcrepe: argent =
    hycoclip + 0.05 on every item (5 points apart: not equivalent at δ = 1 point)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.9, size=N_ITEMS)
    for seed in range(3):
        seed_shift = rng.normal(0, 0.01)
        hyco = np.clip(base + seed_shift + rng.normal(0, 0.02, size=N_ITEMS), 0, 1)
        argent = hyco + rng.normal(0, 0.001, size=N_ITEMS)
        root = results / "eval" / "main"
        _items_json(root / "hycoclip-tiny" / f"seed{seed}" / "hs_retrieval.json", "hs_retrieval", "t2i_R@5", hyco)
        _items_json(root / "argent-tiny" / f"seed{seed}" / "hs_retrieval.json", "hs_retrieval", "t2i_R@5", argent)
        _items_json(root / "hycoclip-tiny" / f"seed{seed}" / "hs_sugarcrepe.json", "hs_sugarcrepe", "mean", hyco)
        _items_json(root / "argent-tiny" / f"seed{seed}" / "hs_sugarcrepe.json", "hs_sugarcrepe", "mean", hyco + 0.05)


CLAIMS = {"margins": MARGINS, "claims": [
    {"id": "two-roles", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
     "metrics": {"pep_auc": {"expect": "better"}, "zeroshot": {"expect": "worse"}, "tie": {"expect": "better"}}},
    {"id": "meru-clip", "source": "T", "a": "meru", "b": "clip", "primary": "zeroshot",
     "metrics": {"zeroshot": {"expect": "worse"}}},
    {"id": "matches", "source": "T", "a": "argent", "b": "hycoclip", "primary": "retrieval",
     "metrics": {"retrieval": {"expect": "equal"}}},
    {"id": "shifted", "source": "T", "a": "argent", "b": "hycoclip", "primary": "compositional",
     "metrics": {"compositional": {"expect": "equal"}}},
    {"id": "no-primary", "source": "T", "a": "hycoclip", "b": "meru", "primary": "none",
     "note": "exploratory only: no claim of the source", "metrics": {"pep_auc": {"expect": "better"},
                                                                     "zeroshot": {"expect": "better"}}},
]}


def _items_config(claims_file: Path) -> dict:
    cfg = claims_config(claims_file)
    cfg["tables"]["claims"]["metrics"].update({
        "retrieval": [{"benchmark": "hs_retrieval", "metric": "t2i_R@5", "scale": 100}],
        "compositional": [{"benchmark": "hs_sugarcrepe", "metric": "mean", "scale": 100}],
        "pep_auc": [{"benchmark": "hs_pep", "metric": "auc", "scale": 100},
                    {"benchmark": "real_pep", "metric": "auc", "scale": 100}]})
    cfg["hiershapes"] = {"out": "data/hiershapes"}
    cfg["data"] = {"train_shards": "data/hiershapes/train/shard-*.tar"}
    cfg["benchmarks"] = {"hs_pep": {"protocol": "pep", "hierarcaps_csv": "data/hiershapes/hierarcaps/test.csv"},
                         "real_pep": {"protocol": "pep", "hierarcaps_csv": "/data/hierarcaps/hierarcaps_test.csv"},
                         "hs_zeroshot": {"protocol": "zeroshot", "root": "data/hiershapes/classification"},
                         "hs_retrieval": {"protocol": "retrieval", "annotations": "data/hiershapes/retrieval/a.json"},
                         "hs_sugarcrepe": {"protocol": "compositional", "json_dir": "data/hiershapes/sugarcrepe"}}
    return cfg


def _write_train_records(results: Path, cpu_s: dict[str, float]) -> None:
    """Snakemake benchmark records of main's training jobs, at ``cpu_s`` CPU seconds a run."""
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for variant, cpu in cpu_s.items():
        for seed in range(3):
            path = results / "benchmarks" / "train" / "main" / f"{variant}-tiny-seed{seed}.tsv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header + f"{cpu + 5}\t0:05:00\t900\t1\t1\t1\t0\t0\t99\t{cpu + seed - 1}\n")


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pl.DataFrame:
    tmp = tmp_path_factory.mktemp("families")
    claims = tmp / "claims.yaml"
    claims.write_text(yaml.safe_dump(CLAIMS))
    results = tmp / "results"
    write_eval_results(results)
    for variant, seeds in EVAL.items():     # the real-data PEP, under models trained on hiershapes
        for seed, benches in seeds.items():
            if "hs_pep" in benches:
                path = results / "eval" / GROUP_OF.get(variant, "main") / f"{variant}-tiny" / f"seed{seed}" / "real_pep.json"
                path.write_text(json.dumps({"benchmark": "real_pep", "metrics": benches["hs_pep"]}))
    _write_item_results(results)
    _write_train_records(results, {"argent": 300.0, "hycoclip": 200.0})   # meru and clip: not measured
    released = results / "eval" / "pretrained" / "hycoclip-S" / "seed0" / "hs_zeroshot.json"
    released.parent.mkdir(parents=True)
    released.write_text(json.dumps({"benchmark": "hs_zeroshot", "variant": "hycoclip", "size": "S", "seed": 0,
                                    "pretrained": {"layout": "meru", "arch": "vit_s"}, "metrics": {"top1": 0.417}}))
    run(TablesOptions(WorkflowConfig(_items_config(claims)), results, base_dir=tmp))
    return pl.read_csv(results / "tables" / "claims.csv")


def _row(table: pl.DataFrame, claim: str, benchmark: str, role: str | None = None) -> dict:
    rows = table.filter((pl.col("id") == claim) & (pl.col("benchmark") == benchmark)
                        & (pl.col("role") == role if role else pl.lit(True))).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def test_the_declared_role_is_primary_and_the_others_exploratory(table):
    assert _row(table, "two-roles", "hs_pep")["family"] == "primary"
    assert {_row(table, "two-roles", "hs_zeroshot", role)["family"] for role in ("zeroshot", "tie")} == {"exploratory"}


def test_a_claim_without_a_primary_role_has_only_exploratory_rows(table):
    # primary: none -> hs_pep, which would be the primary row of a pep_auc claim, is exploratory
    rows = table.filter(pl.col("id") == "no-primary").to_dicts()
    families = {(r["benchmark"], r["role"]): r["family"] for r in rows}
    assert families == {("hs_pep", "pep_auc"): "exploratory", ("real_pep", "pep_auc"): "out of domain",
                        ("hs_zeroshot", "zeroshot"): "exploratory"}
    for r in rows:
        assert r["seeds_for_power"] is None and r["note"].startswith("exploratory only")
    tested = [r for r in rows if r["family"] == "exploratory"]
    assert all(r["p"] is not None and r["p_adjusted"] is not None for r in tested)   # in BH's family
    # the primary family is the other claims' declared rows only: one per claim
    primary = table.filter(pl.col("family") == "primary")
    assert sorted(primary["id"].to_list()) == ["matches", "meru-clip", "shifted", "two-roles"]


def test_primary_rows_are_holm_adjusted_and_exploratory_rows_bh_adjusted(table):
    for family, adjust in (("primary", holm), ("exploratory", benjamini_hochberg)):
        rows = table.filter((pl.col("family") == family) & pl.col("p").is_not_null())
        assert rows.height >= 2, family
        assert rows["p_adjusted"].to_list() == pytest.approx(adjust(rows["p"].to_list())), family
        for r in rows.to_dicts():
            decided = r["verdict"] != "inconclusive"
            assert decided == (r["p_adjusted"] <= 0.05), r


def test_out_of_domain_rows_get_no_test_and_no_verdict(table):
    row = _row(table, "two-roles", "real_pep")
    assert row["family"] == "out of domain" and row["verdict"] == "out of domain"
    assert row["p"] is None and row["p_adjusted"] is None
    assert "real_pep is real data" in row["note"] and "synthetic" in row["note"]
    assert row["diff_mean"] is not None          # the difference is still printed


def test_equivalence_by_tost_on_items_for_identical_runs_plus_noise(table):
    row = _row(table, "matches", "hs_retrieval")
    assert (row["test"], row["variance"], row["n_items"]) == ("equivalence", "seeds+items", N_ITEMS)
    assert row["verdict"] == "equivalent" and row["ci_low"] > -1 and row["ci_high"] < 1


def test_equivalence_refused_for_a_shifted_copy(table):
    row = _row(table, "shifted", "hs_sugarcrepe")
    assert row["test"] == "equivalence" and row["diff_mean"] == pytest.approx(5.0)
    assert row["verdict"] == "inconclusive" and row["p"] > 0.5


def test_primary_rows_report_the_seeds_their_power_analysis_asks_for(table, tmp_path_factory):
    row = _row(table, "matches", "hs_retrieval")
    assert row["seeds_for_power"] is not None and row["seeds_for_power"] >= 2
    assert row["seed_sd"] is not None
    md = (tmp_path_factory.getbasetemp() / "families0" / "results" / "tables" / "claims.md").read_text()
    assert "## Power of the primary rows" in md and "Holm family-wise" in md and "Setting." in md


def test_the_seeds_asked_for_are_priced_at_the_measured_cpu_time_of_both_runs(table):
    row = _row(table, "two-roles", "hs_pep")               # argent (300 CPU s a run) vs hycoclip (200)
    # planned at its safeguard effect (the lower end of its 60 % CI of |Δ|), priced beyond its 3 seeds
    half60 = scipy_stats.t.ppf(0.8, row["df"]) * (row["ci_high"] - row["ci_low"]) / 2 / scipy_stats.t.ppf(0.975, row["df"])
    assert row["planning_effect"] == pytest.approx(abs(row["diff_mean"]) - half60)
    assert row["cpu_h_for_power"] == pytest.approx(max(row["seeds_for_power"] - 3, 0) * 500 / 3600)
    assert row["seeds_for_delta"] > row["n"] == 3          # the sensitivity column: δ is far smaller
    enough = _row(table, "matches", "hs_retrieval")        # asks for no more seeds than it has
    assert enough["seeds_for_power"] <= 3 and enough["cpu_h_for_power"] == 0
    meru_clip = _row(table, "meru-clip", "hs_zeroshot")    # no training record for either run
    assert meru_clip["family"] == "primary" and meru_clip["cpu_h_for_power"] is None


def test_a_pair_of_runs_tested_twice_on_one_metric_is_refused(tmp_path):
    # ablations/argent is main's run (borrowed: same config), so both claims test the same two runs.
    claims = {"margins": MARGINS, "claims": [
        {"id": "T2", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
         "metrics": {"pep_auc": {"expect": "better"}}},
        {"id": "T3a", "source": "T", "a": "ablations/argent", "b": "hycoclip", "primary": "pep_auc",
         "metrics": {"pep_auc": {"expect": "better"}}}]}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(claims))
    results = tmp_path / "results"
    write_eval_results(results)
    with pytest.raises(ValueError, match=r"claims T2 and T3a test the same runs \(main/argent vs main/hycoclip"):
        run(TablesOptions(WorkflowConfig(claims_config(path)), results))


def test_an_evaluation_placed_under_another_runs_folder_is_refused(tmp_path):
    # argent's evaluation moved under main/hycoclip-tiny would fill the hycoclip row with argent's numbers.
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(CLAIMS))
    results = tmp_path / "results"
    write_eval_results(results)
    moved = results / "eval" / "main" / "hycoclip-tiny" / "seed1" / "hs_pep.json"
    moved.write_text(json.dumps({"benchmark": "hs_pep", "variant": "argent", "size": "tiny", "seed": 1,
                                 "metrics": {"auc": 0.9}}))
    with pytest.raises(ValueError, match=r"hycoclip-tiny/seed1/hs_pep.json: the evaluation records variant 'argent' "
                                         r"\(folder: 'hycoclip'\)"):
        run(TablesOptions(WorkflowConfig(claims_config(path)), results))


def test_pretrained_models_are_rows_of_the_main_table_and_in_no_claim(table, tmp_path_factory):
    main = (tmp_path_factory.getbasetemp() / "families0" / "results" / "tables" / "main.md").read_text()
    assert "## Pretrained models (released checkpoints, not trained here)" in main
    assert "| hycoclip-S | meru:vit_s | 41.7 |" in main
    assert not table.filter(pl.col("variant_a").str.contains("pretrained") | pl.col("variant_b").str.contains("pretrained")).height


def test_a_labelled_row_keeps_its_p_in_holm_and_its_tests_verdict():
    from argent.tables.claims import decide
    from argent.tables.protocol_card import apply_labels
    from argent.tablespec.claims import ClaimsSpec

    def row(absent):
        return {"id": "c", "size": "tiny", "role": "pep_auc", "benchmark": "hs_pep", "family": "primary", "p": 1e-6,
                "p_adjusted": None, "verdict": "", "test": "difference", "diff_mean": 5.0, "expected_sign": 1,
                "margin": 1.0, "note": "", "premise_absent": absent}
    spec = ClaimsSpec([], {}, {}, 0.05)
    rows = decide([row(False), row(True)], spec)
    apply_labels(rows, spec)
    assert [r["p_adjusted"] for r in rows] == pytest.approx([2e-6, 2e-6])     # both in the family (m = 2)
    assert [r["verdict"] for r in rows] == ["reproduced", "premise absent"]   # withheld, not removed
    assert [r["test_verdict"] for r in rows] == ["reproduced", "reproduced"]