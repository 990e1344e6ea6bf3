"""argent tables on synthetic evaluation JSON: claims verdicts, "not run" rows, n=1 and partial
cells, the mechanism table, and the CLI's outputs."""

import json
import math
from pathlib import Path

import polars as pl
import pytest
import yaml

from argent.cli import main as argent_main
from argent.config import WorkflowConfig
from argent.tables.run import TablesOptions, run
from argent.tables.stats import mean_ci
from argent.tablespec.claims import NO_PRIMARY, expected_sign, load_claims
from argent.tablespec.declarations import parse_roles
from tests.fixtures import MARGINS, ROOT, claims_config, write_eval_results

CLAIMS = {"margins": MARGINS, "claims": [
    {"id": "up", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
     "metrics": {"pep_auc": {"expect": "better", "published": [97.3, 94.6]}}},
    {"id": "down", "source": "T", "a": "argent", "b": "hycoclip", "primary": "zeroshot",
     "metrics": {"zeroshot": {"expect": "better", "published": [38.8, 37.3]}}},
    {"id": "tie", "source": "T", "a": "argent", "b": "hycoclip", "primary": "tie",
     "metrics": {"tie": {"expect": "better", "published": [3.76, 3.96]}}},
    {"id": "noisy", "source": "T", "a": "meru", "b": "clip", "primary": "zeroshot",
     "metrics": {"zeroshot": {"expect": "worse"}}},
    {"id": "absent", "source": "T", "a": "ablations/argent_noreg", "b": "ablations/argent", "primary": "zeroshot",
     "metrics": {"zeroshot": {"expect": "worse", "published": [20.8, 22.8]}}},
    {"id": "single", "source": "T", "a": "single/meru_adaent", "b": "meru", "primary": "pep_auc",
     "metrics": {"pep_auc": {"expect": "better"}}},
    {"id": "unmapped", "source": "T", "a": "argent", "b": "meru", "primary": "compositional",
     "metrics": {"compositional": {"expect": "better"}}},
    {"id": "undefined", "source": "T", "a": "argent", "b": "clip", "primary": "pep_auc",
     "metrics": {"pep_auc": {"expect": "better"}}},
]}

# seed -> metrics per variant; argent beats hycoclip on PEP by ≈ 5 points on every seed (a shared
# seed effect on top), loses on top-1 by ≈ 4, and has the lower (better) TIE.


# Groups: main trains four families with three seeds; ablations lists argent_noreg (never evaluated
# here: "not run") and argent, borrowed from main (same config); single trains meru_adaent, seed 0.


@pytest.fixture
def built(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump(CLAIMS))
    results = tmp_path / "results"
    write_eval_results(results)
    run(TablesOptions(WorkflowConfig(claims_config(claims)), results))
    return results / "tables"


def _claim(tables: Path, claim_id: str) -> dict:
    rows = pl.read_csv(tables / "claims.csv").filter(pl.col("id") == claim_id).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def test_reproduced_with_the_hand_computed_paired_difference(built):
    row = _claim(built, "up")
    diffs = [100 * ((0.80 + d) - (0.75 + d + e)) for d, e in [(0, 0.001), (0.03, -0.002), (-0.02, 0.0015)]]
    expected = mean_ci(diffs)
    assert row["n"] == 3 and row["seeds"] == "0 1 2"
    assert row["diff_mean"] == pytest.approx(expected.mean) and row["ci95"] == pytest.approx(expected.half_width)
    assert row["published_diff"] == pytest.approx(97.3 - 94.6)
    assert row["verdict"] == "reproduced"


def test_contradicted_when_the_ci_excludes_zero_the_other_way(built):
    row = _claim(built, "down")
    assert row["diff_mean"] < 0 and row["ci_high"] < 0
    assert row["verdict"] == "contradicted"


def test_lower_is_better_metric_reproduces_with_a_negative_difference(built):
    row = _claim(built, "tie")
    assert row["lower_is_better"] is True and row["expected_sign"] == -1
    assert row["diff_mean"] == pytest.approx(-0.4) and row["verdict"] == "reproduced"


def test_inconclusive_when_the_ci_covers_zero(built):
    row = _claim(built, "noisy")  # meru − clip on top-1: −3, +5, −4 points
    assert row["ci_low"] < 0 < row["ci_high"] and row["verdict"] == "inconclusive"


def test_missing_variant_gives_a_not_run_row(built):
    row = _claim(built, "absent")
    assert row["verdict"] == "not run" and "argent_noreg" in row["note"] and row["n"] == 0
    md = (built / "claims.md").read_text()
    assert "| absent |" in md and "not run" in md


def test_n1_claim_has_no_ci_and_no_verdict(built):
    row = _claim(built, "single")  # meru_adaent has seed 0 only (as configured)
    assert row["n"] == 1 and row["ci95"] is None and row["verdict"] == "inconclusive"
    assert row["partial"] is False  # one seed is all the config trains for meru_adaent
    assert row["diff_mean"] == pytest.approx(10.0)


def test_unmapped_role_and_undefined_metric_are_said_not_dropped(built):
    assert _claim(built, "unmapped")["verdict"] == "not evaluated"
    assert _claim(built, "undefined")["verdict"] == "n/a"  # PEP is null for CLIP


def test_partial_seeds_pair_only_common_seeds_and_say_so(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump(CLAIMS))
    results = tmp_path / "results"
    write_eval_results(results, drop=(("hycoclip", 2),))
    run(TablesOptions(WorkflowConfig(claims_config(claims)), results))
    row = _claim(results / "tables", "up")
    assert (row["n"], row["n_configured"], row["partial"], row["seeds"]) == (2, 3, True, "0 1")
    main = pl.read_csv(results / "tables" / "main.csv")
    cell = main.filter((pl.col("variant") == "main/hycoclip") & (pl.col("column") == "Cls")).to_dicts()[0]
    assert (cell["n"], cell["partial"]) == (2, True)
    assert "(n=2) †" in (results / "tables" / "main.md").read_text()


def test_main_and_ablation_cells(built):
    main = pl.read_csv(built / "main.csv")
    cell = main.filter((pl.col("variant") == "main/meru") & (pl.col("column") == "Cls")).to_dicts()[0]
    expected = mean_ci([30.0, 36.0, 31.0])
    assert cell["mean"] == pytest.approx(expected.mean) and cell["ci95"] == pytest.approx(expected.half_width)
    assert cell["n"] == 3 and cell["status"] == "ok"
    clip_pep = main.filter((pl.col("variant") == "main/clip") & (pl.col("column") == "PEP AUC")).to_dicts()[0]
    assert clip_pep["status"] == "n/a"
    abl = pl.read_csv(built / "ablations.csv")
    noreg = abl.filter(pl.col("variant") == "ablations/argent_noreg").to_dicts()
    assert noreg and all(r["status"] == "not run" for r in noreg)
    # ablations/argent is main's run (same config hash): its cells are main's numbers, n = 3
    borrowed = abl.filter(pl.col("variant") == "ablations/argent").to_dicts()[0]
    assert (borrowed["n"], borrowed["status"]) == (3, "ok")
    assert borrowed["mean"] == pytest.approx(100 * (0.40 + 0.43 + 0.38) / 3)
    single = abl.filter(pl.col("variant") == "single/meru_adaent").to_dicts()[0]
    assert (single["n"], single["ci95"], single["status"]) == (1, None, "ok")
    md = (built / "ablations.md").read_text()
    assert "| MERU AdaEnt | tiny | 30.00 (n=1) |" in md and "| no reg | tiny | not run |" in md


def test_mechanism_from_the_last_diagnostics(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump(CLAIMS))
    results = tmp_path / "results"
    write_eval_results(results)
    for seed, (share, phi) in enumerate([(0.5, 1.0), (0.7, 1.2), (0.6, 1.1)]):
        run_dir = results / "runs" / "main" / "meru-tiny" / f"seed{seed}"
        run_dir.mkdir(parents=True)
        lines = [{"step": 4, "diag/collapse/text": 0.0, "diag/phi/text_image": 3.0, "curv": 1.0},
                 {"step": 6, "loss": 1.0},
                 {"step": 8, "diag/collapse/text": share, "diag/phi/text_image": phi, "curv": 0.64,
                  "diag/norm/text/q50": 0.5 if seed else 0.1}]
        (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        (run_dir / "config.yaml").write_text(yaml.safe_dump({"variant": {"cone_k": 0.1}}))
    clip_dir = results / "runs" / "main" / "clip-tiny" / "seed0"
    clip_dir.mkdir(parents=True)
    (clip_dir / "metrics.jsonl").write_text(json.dumps({"step": 8, "diag/norm/image/mean": 1.0}) + "\n")
    run(TablesOptions(WorkflowConfig(claims_config(claims)), results))
    mech = pl.read_csv(results / "tables" / "mechanism.csv")
    meru = mech.filter(pl.col("variant") == "main/meru").to_dicts()
    assert [r["pair"] for r in meru] == ["text_image"]
    assert meru[0]["collapse_mean"] == pytest.approx(0.6) and meru[0]["phi_mean"] == pytest.approx(1.1)
    assert meru[0]["collapse_ci95"] == pytest.approx(mean_ci([0.5, 0.7, 0.6]).half_width)
    assert meru[0]["step"] == "8" or meru[0]["step"] == 8
    # aperture at the median norm: asin(2K/(√c·m)) = asin(0.2/(0.8·0.5)) = π/6 for seeds 1, 2; seed 0's
    # median norm 0.1 is inside 2K/√c = 0.25, where the cone is a half-space: π/2.
    apertures = [math.pi / 2, math.pi / 6, math.pi / 6]
    assert meru[0]["omega_mean"] == pytest.approx(sum(apertures) / 3)
    assert meru[0]["omega_ci95"] == pytest.approx(mean_ci(apertures).half_width)
    statuses = {r["variant"]: r["status"] for r in mech.to_dicts()}
    assert statuses["main/clip"] == "n/a" and statuses["main/argent"] == "not run"
    assert "60.0 ± " in (results / "tables" / "mechanism.md").read_text()


def test_claims_file_errors_name_the_claim(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [{"id": "x", "source": "s", "a": "a", "b": "b",
                                   "primary": "tie", "metrics": {"tie": {"published": [1, 2]}}}]}))
    with pytest.raises(ValueError, match="claim x, metrics.tie: expect must be"):
        load_claims(bad)
    # published sign against expect, under the metric's direction: TIE 3.96 − 3.76 > 0 is worse.
    claims = tmp_path / "c.yaml"
    claims.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [
        {"id": "y", "source": "s", "a": "argent", "b": "hycoclip", "primary": "tie",
         "metrics": {"tie": {"expect": "better", "published": [3.96, 3.76]}}}]}))
    results = tmp_path / "results"
    write_eval_results(results)
    with pytest.raises(ValueError, match="claim y, metric tie: published A − B = \\+0.2"):
        run(TablesOptions(WorkflowConfig(claims_config(claims)), results))


def test_shipped_claims_file_parses_and_agrees_with_its_published_numbers(tmp_path):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    claims = load_claims(ROOT / cfg["tables"]["claims"]["file"]).claims
    ids = {c.id for c in claims}
    assert {"T3a-meru-adaent-vs-cone", "T3a-hycoclip-adaent-vs-cone-B", "T3b-intra-vs-none", "T3b-intra-vs-any",
            "T3c-reg-hycoclip", "T3c-reg-meru", "CJ-concrete-vs-random", "CJ-cement-vs-none"} <= ids
    roles = set(cfg["tables"]["claims"]["metrics"])
    assert {m.role for c in claims for m in c.metrics} <= roles
    variants = yaml.safe_load((ROOT / "config" / "variants.yaml").read_text())
    # claims name <group>/<variant> (bare: main): a catalogue variant, or <base>-tuned for a base the default
    # tunes; every group is one of the shipped configs' groups
    tuned = {f"{base}-tuned" for base in cfg["tune"]["base_variants"]}
    assert {v.rpartition("/")[2] for c in claims for v in (c.a, c.b)} <= set(variants) | tuned
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    assert {v.rpartition("/")[0] or "main" for c in claims for v in (c.a, c.b)} <= set(cfg["groups"]) | set(paper["groups"])
    # the amendment log parses; every entry says what it was decided after
    spec = load_claims(ROOT / cfg["tables"]["claims"]["file"])
    assert spec.amendments and all(a.decided_after and a.why and a.change for a in spec.amendments)
    # every published difference agrees with its expected direction under the config's metric directions
    for config in ("config.yaml", "paper.yaml"):
        mapping = yaml.safe_load((ROOT / "config" / config).read_text())["tables"]["claims"]["metrics"]
        specs = parse_roles(mapping)
        assert {m.role for c in claims for m in c.metrics} <= set(specs), config
        for c in claims:
            for m in c.metrics:
                for spec in specs[m.role]:
                    assert expected_sign(m, spec, c.id) in ((0,) if m.expect in ("equal", "none") else (1, -1))


# The primary family of the shipped file at size tiny, as amended on 2026-12-02 (config/claims.yaml,
# amendments): 13 rows, down from 16. A change here is a change of the pre-registration: log it there.
SHIPPED_PRIMARY = {
    "T2-argent-vs-hycoclip": "zeroshot", "T2-hycoclip-vs-meru": "zeroshot", "T2-argent-vs-meru": "zeroshot",
    "T2-argent-vs-clip": "zeroshot", "T3a-meru-adaent-vs-cone": "pep_auc", "T3b-intra-vs-none": "pep_auc",
    "T3b-intra-vs-any": "pep_auc", "T3b-none-vs-any-hycoclip": "pep_auc", "T3b-none-vs-any-meru": "pep_auc",
    "T3c-reg-hycoclip": "zeroshot", "CJ-concrete-vs-none": "compositional", "CJ-concrete-vs-random": "compositional",
    "CJ-cement-vs-concrete": "compositional"}


def test_the_shipped_primary_family_at_size_tiny():
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    spec = load_claims(ROOT / cfg["tables"]["claims"]["file"])
    roles = parse_roles(cfg["tables"]["claims"]["metrics"])
    tiny = {c.id: c.primary for c in spec.claims if c.primary is not None and (not c.sizes or "tiny" in c.sizes)}
    assert tiny == SHIPPED_PRIMARY and len(tiny) == 13
    # each primary role is measured on hiershapes in the default (the training domain): one primary row each
    assert all(roles[role][0].benchmark.startswith("hs_") for role in tiny.values())
    exploratory_only = {c.id for c in spec.claims if c.primary is None}
    controls = {"T3a-ctl-loss-meru", "T3a-ctl-weight-meru", "T3a-ctl-reg-meru", "T2-ctl-loss-hycoclip",
                "T2-ctl-weight-argent", "T2-ctl-reg-hycoclip", "T3a-ctl-tuned-meru", "T2-ctl-tuned-argent"}
    assert exploratory_only == {"T2-meru-vs-clip", "T3c-reg-meru", "CJ-cement-vs-none"} | controls
    # every demotion is logged in the amendments, naming the claim; the controls were added, never primary
    demoted = {cid for a in spec.amendments for cid in a.claims if f"-> {NO_PRIMARY}" in a.change}
    assert demoted == exploratory_only - controls
    added = {cid for a in spec.amendments for cid in a.claims if "control claims" in a.change}
    assert controls <= added


def _claims_with(tmp_path: Path, text: str) -> Path:
    """A claims file with one valid claim and ``text`` appended (top-level YAML)."""
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [
        {"id": "up", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
         "metrics": {"pep_auc": {"expect": "better", "published": [97.3, 94.6]}}}]}) + text)
    return path


def test_the_amendment_log_parses(tmp_path):
    path = _claims_with(tmp_path, """amendments:
  - {date: 2026-12-02, change: "up: the claim restated", why: "a reason",
     decided_after: "no run", claims: [up]}
  - {date: "2026-12-03", change: "margins: a why rewritten", why: "another", decided_after: "the pilot"}
""")
    spec = load_claims(path)
    assert [(a.date, a.change, a.decided_after, a.claims) for a in spec.amendments] == [
        ("2026-12-02", "up: the claim restated", "no run", ("up",)),
        ("2026-12-03", "margins: a why rewritten", "the pilot", ())]
    assert load_claims(_claims_with(tmp_path, "")).amendments == []


@pytest.mark.parametrize("entry, message", [
    ('{date: 2026-12-02, change: c, why: w}', r"amendments\[0\]: missing keys \['decided_after'\]; every amendment says "
                                              r"date, change, why, decided_after"),
    ('{date: 2026-12-02, change: c, why: w, decided_after: d, seen: x}', r"amendments\[0\]: unknown keys \['seen'\]"),
    ('{date: "2 December", change: c, why: w, decided_after: d}', r"amendments\[0\].date: must be a date YYYY-MM-DD, "
                                                                 r"got '2 December'"),
    ('{date: 2026-12-02, change: c, why: "  ", decided_after: d}', r"amendments\[0\].why: say why it changed"),
    ('{date: 2026-12-02, change: c, why: w, decided_after: ""}', r"amendments\[0\].decided_after: name the run"),
    ('{date: 2026-12-02, change: c, why: w, decided_after: d, claims: [gone]}',
     r"amendments\[0\].claims: \['gone'\] are no claims of this file; name a removed claim in change: instead"),
    ('just a sentence', r"amendments\[0\]: expected \{date: YYYY-MM-DD"),
])
def test_a_malformed_amendment_is_a_clear_error_naming_the_file_and_entry(tmp_path, entry, message):
    path = _claims_with(tmp_path, f"amendments:\n  - {entry}\n")
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        load_claims(path)
    not_a_list = _claims_with(tmp_path, "amendments: {date: 2026-12-02}\n")
    with pytest.raises(ValueError, match="amendments: expected a list of entries"):
        load_claims(not_a_list)


def test_primary_none_parses_and_needs_a_note(tmp_path):
    claim = {"id": "x", "source": "s", "a": "argent", "b": "hycoclip", "primary": "none",
             "metrics": {"tie": {"expect": "better"}}}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [claim]}))
    with pytest.raises(ValueError, match=f"{path}: claim x: primary: none \\(every row exploratory\\): say in note: why"):
        load_claims(path)
    path.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [{**claim, "note": "no claim of the source"}]}))
    assert load_claims(path).claims[0].primary is None
    # a primary that is no role of the claim (a typo, or YAML null) names the way out
    for bad in ("pep_auc", None):
        path.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [{**claim, "primary": bad}]}))
        with pytest.raises(ValueError, match=r"claim x: primary: .* is not one of its metrics \['tie'\]; name the role "
                                             r"of its confirmatory row, or 'none' for a claim whose rows are all exploratory"):
            load_claims(path)


def test_cli_writes_every_table(tmp_path, capsys):
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump(CLAIMS))
    results = tmp_path / "results"
    write_eval_results(results)
    config = tmp_path / "workflow_config.yaml"
    config.write_text(yaml.safe_dump(claims_config(claims)))
    assert argent_main(["tables", "--config", str(config), "--results", str(results)]) == 0
    for name in ("main", "ablations", "claims", "mechanism"):
        assert (results / "tables" / f"{name}.md").is_file() and (results / "tables" / f"{name}.csv").is_file()
    assert "Claims of the papers" in capsys.readouterr().out
    capsys.readouterr()
    # an expected failure: one message, exit 2 (the documented code of every verb), no traceback
    assert argent_main(["tables", "--config", str(config), "--results", str(tmp_path / "empty")]) == 2
    assert "argent tables: no evaluation JSON" in capsys.readouterr().err
