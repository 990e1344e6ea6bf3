"""argent.tables.cost: Snakemake's job records -> cost tables per stage and per variant."""

import csv
import math
from pathlib import Path

import pytest

from argent.runs import read_job_records
from argent.tables.cost import cost_rows, main, run_cpu_seconds, write_cost_tables

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def tsv(path: Path, *rows: tuple[float, str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{s}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n" for s, rss, cpu in rows))


@pytest.fixture
def bench(tmp_path):
    root = tmp_path / "benchmarks"
    tsv(root / "train" / "argent-tiny-seed0.tsv", (100.0, "512.5", "190.0"))
    tsv(root / "train" / "argent-tiny-seed1.tsv", (120.0, "600.0", "230.0"))
    tsv(root / "train" / "argent-tuned-tiny-seed0.tsv", (80.0, "NA", "NA"))
    tsv(root / "evaluate" / "argent-tiny-seed0.tsv", (30.0, "300", "29"))
    tsv(root / "tables" / "tables.tsv", (10.0, "200", "9"))
    return root


def test_per_stage_and_per_variant_aggregates(bench):
    per_stage, per_variant = cost_rows(read_job_records(bench))
    stage = {r["stage"]: r for r in per_stage}
    assert stage["train"]["jobs"] == 3
    assert stage["train"]["total_wall_s"] == 300.0 and stage["train"]["mean_wall_s"] == 100.0
    assert stage["train"]["peak_max_rss_mb"] == 600.0  # NA left out, not read as 0
    assert stage["train"]["cpu_s"] == 420.0
    assert stage["all"]["total_wall_s"] == 340.0 and stage["all"]["jobs"] == 5
    assert stage["train"]["share_of_wall"] == round(300 / 340, 4)
    assert math.isclose(sum(r["share_of_wall"] for r in per_stage if r["stage"] != "all"), 1.0, abs_tol=1e-3)
    variant = {(r["stage"], r["variant"]): r for r in per_variant}
    # A variant name with a dash ("argent-tuned") is split from size and seed correctly.
    assert set(variant) == {("train", "argent"), ("train", "argent-tuned"), ("evaluate", "argent")}
    assert variant[("train", "argent")]["jobs"] == 2 and variant[("train", "argent")]["total_wall_s"] == 220.0
    assert math.isnan(variant[("train", "argent-tuned")]["peak_max_rss_mb"])


def test_repeats_are_rows_of_one_job(tmp_path):
    tsv(tmp_path / "b" / "train" / "clip-tiny-seed0.tsv", (10.0, "100", "9"), (14.0, "120", "13"))
    per_stage, _ = cost_rows(read_job_records(tmp_path / "b"))
    assert per_stage[0]["jobs"] == 1 and per_stage[0]["mean_wall_s"] == 12.0


def test_writes_markdown_and_csv(bench, tmp_path):
    md, csv_path = write_cost_tables(bench, tmp_path / "tables")
    text = md.read_text()
    assert "## Per stage" in text and "| train |  | 3 | 300 | 100 |" in text
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["table"] for r in rows} == {"stage", "variant"}
    train = next(r for r in rows if r["table"] == "stage" and r["stage"] == "train")
    assert float(train["total_wall_s"]) == 300.0


def test_a_broken_file_is_named(tmp_path, capsys):
    bad = tmp_path / "b" / "train" / "clip-tiny-seed0.tsv"
    bad.parent.mkdir(parents=True)
    bad.write_text("not a benchmark\n1\n")
    assert main(["--job-records", str(tmp_path / "b"), "--out", str(tmp_path / "out")]) == 1
    assert "clip-tiny-seed0.tsv" in capsys.readouterr().err
    assert main(["--job-records", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 1


def test_run_cpu_seconds_are_the_mean_per_group_variant_and_size(tmp_path):
    root = tmp_path / "benchmarks"
    tsv(root / "train" / "main" / "argent-tiny-seed0.tsv", (100.0, "512", "190.0"))
    tsv(root / "train" / "main" / "argent-tiny-seed1.tsv", (120.0, "600", "230.0"))
    tsv(root / "train" / "negatives" / "argent_negs-tiny-seed0.tsv", (90.0, "600", "NA"))   # not measured
    tsv(root / "evaluate" / "main" / "argent-tiny-seed0.tsv", (30.0, "300", "29"))
    jobs = read_job_records(root)
    assert run_cpu_seconds(jobs) == {("main", "argent", "tiny"): 210.0}
    assert run_cpu_seconds(jobs, "evaluate") == {("main", "argent", "tiny"): 29.0}
    assert run_cpu_seconds(read_job_records(tmp_path / "absent")) == {}
