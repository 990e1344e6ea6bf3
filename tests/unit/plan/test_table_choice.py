"""Which tables a config writes (argent/plan/table_choice.py), and the tables job leaving out, with one
printed line each, a table that would hold no run or no tested claim; every table it writes has its
HTML page (argent/tables/html.py)."""

import copy

import polars as pl
import pytest
import yaml

from argent.cli import main as argent_main
from argent.config import WorkflowConfig, load_config
from argent.plan.groups import build_plan
from argent.plan.table_choice import choose_tables
from argent.tables.html import markdown_html, write_html
from argent.tables.run import TablesOptions, run
from argent.tablespec.claims import load_claims
from argent.tablespec.outputs import TABLES, table_paths
from argent.tablespec.section import tables_section
from tests.fixtures import MARGINS, ROOT, claims_config, write_eval_results

CLAIMS = {"margins": MARGINS, "claims": [
    {"id": "up", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
     "metrics": {"pep_auc": {"expect": "better", "published": [97.3, 94.6]}}},
    {"id": "abl", "source": "T", "a": "ablations/argent_noreg", "b": "ablations/argent", "primary": "zeroshot",
     "metrics": {"zeroshot": {"expect": "worse"}}}]}


@pytest.fixture
def claims_file(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(CLAIMS))
    return path


def _one_seed_main_only(cfg: dict) -> dict:
    """The fixture's config as config/quick.yaml shapes the default: one seed, the ablation groups off."""
    cfg = copy.deepcopy(cfg)
    cfg["runs"]["seeds"] = [0]
    cfg["groups"]["ablations"]["enabled"] = False
    cfg["groups"]["single"]["enabled"] = False
    return cfg


def _choice(cfg: dict, claims_file, probe: bool = False):
    return choose_tables(tables_section(cfg), build_plan(WorkflowConfig(cfg), ROOT), load_claims(claims_file), probe)


def test_three_seeds_and_every_group_write_every_table(claims_file):
    choice = _choice(claims_config(claims_file), claims_file, probe=True)
    assert choice.written == TABLES and choice.left_out == {} and choice.lines() == []
    assert _choice(claims_config(claims_file), claims_file).left_out.keys() == {"probe"}


def test_one_seed_and_no_ablation_group_leave_out_claims_and_ablations_one_line_each(claims_file):
    choice = _choice(_one_seed_main_only(claims_config(claims_file)), claims_file)
    assert choice.written == ("main", "mechanism", "cost")
    assert choice.lines() == [
        "argent tables: no claims table: each claim's two runs share 1 seed at most, and a claim is tested on 2 "
        "paired seeds or more (raise runs.seeds or a group's seeds, as config/config.yaml does for every group; or "
        "lower tables.claims.min_paired_seeds)",
        "argent tables: no ablations table: none of its rows' groups runs (ablations: groups.ablations.enabled is "
        "false; single: groups.single.enabled is false)",
        "argent tables: no probe table: the probe did not run (probe.enabled is false, or no probe result)"]


def test_claims_whose_runs_no_group_trains_and_the_n1_table_on_request(claims_file):
    cfg = _one_seed_main_only(claims_config(claims_file))
    cfg["groups"]["main"]["variants"] = ["clip", "meru"]  # neither claim's runs are trained
    assert _choice(cfg, claims_file).left_out["claims"] == "no claim compares two runs this config trains"
    cfg = _one_seed_main_only(claims_config(claims_file))
    cfg["tables"]["claims"]["min_paired_seeds"] = 1  # config/smoke.yaml: CI runs the claims code at n=1
    assert "claims" in _choice(cfg, claims_file).written


def test_the_quick_config_writes_main_mechanism_and_cost():
    cfg = load_config(ROOT / "config" / "quick.yaml", base_dir=ROOT).raw
    choice = choose_tables(tables_section(cfg), build_plan(WorkflowConfig(cfg), ROOT), load_claims(ROOT / "config" / "claims.yaml"), probe=False)
    assert choice.written == ("main", "mechanism", "cost") and set(choice.left_out) == {"claims", "ablations", "probe"}


def test_the_tables_job_leaves_them_out_prints_why_and_removes_their_old_files(claims_file, tmp_path, capsys):
    results = tmp_path / "results"
    write_eval_results(results)
    stale = table_paths(results / "tables", "claims")
    for path in stale.values():  # an earlier run's claims table in the same results folder
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old")
    written = run(TablesOptions(WorkflowConfig(_one_seed_main_only(claims_config(claims_file))), results))
    out = capsys.readouterr().out
    assert "argent tables: no claims table: each claim's two runs share 1 seed at most" in out
    assert "argent tables: no ablations table: none of its rows' groups runs" in out
    assert "argent tables: no per-run figures: no evaluation wrote one" in out
    assert not any(path.exists() for path in stale.values())
    assert not (results / "tables" / "ablations.md").exists() and not (results / "figures" / "runs").exists()
    for name in ("main", "mechanism"):
        assert set(table_paths(results / "tables", name).values()) <= set(written)
        assert all(path.is_file() for path in table_paths(results / "tables", name).values())
    # the mechanism table lists the runs this config trains, not "not run" rows of groups switched off
    assert set(pl.read_csv(results / "tables" / "mechanism.csv")["variant"]) <= {
        "main/clip", "main/meru", "main/hycoclip", "main/argent"}


def test_the_verb_prints_the_main_table_and_no_claims_table_it_left_out(claims_file, tmp_path, capsys):
    results = tmp_path / "results"
    write_eval_results(results)
    config = tmp_path / "workflow_config.yaml"
    config.write_text(yaml.safe_dump(_one_seed_main_only(claims_config(claims_file))))
    assert argent_main(["tables", "--config", str(config), "--no-default", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "argent tables: no claims table:" in out and "| row |" in out and "Claims of the papers" not in out


def test_the_html_page_renders_the_markdown_table_and_escapes_markup(tmp_path):
    md = ("# Main\n\nmean ± CI; † fewer seeds <script>x</script>\n\n"
          "| row | Cls % |\n|---|---|\n| argent | 90.7 ± 3.6 |\n")
    page = markdown_html(md, "main")
    assert page.startswith("<!DOCTYPE html>") and "<title>main</title>" in page and 'charset="utf-8"' in page
    assert "<h1>Main</h1>" in page and "<th>row</th>" in page and "<td>90.7 ± 3.6</td>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    path = tmp_path / "main.md"
    path.write_text(md)
    assert write_html(path) == tmp_path / "main.html" and (tmp_path / "main.html").read_text() == page
