"""argent/runs/job_records.py: the one reader of Snakemake's job records and the one spelling of a run's job name."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from argent.runs import (
    JobRecordError,
    job_record_path,
    parse_run_job,
    read_job_record,
    read_job_records,
    run_job,
    run_job_record,
)
from tests.fixtures import ROOT

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_run_s_job_name_round_trips_dashes_in_the_variant_included():
    assert run_job("argent-tuned", "tiny", 3) == "argent-tuned-tiny-seed3"
    job = parse_run_job("argent-tuned-tiny-seed3")
    assert (job.variant, job.size, job.seed) == ("argent-tuned", "tiny", 3)
    for other in ("tables", "hycoclip-S", "argent_weights-worker1", "-seed0", "tiny-seed0"):
        assert parse_run_job(other) is None, other
    assert run_job_record("res", "train", "main", "clip", "S", 0) == Path("res/benchmarks/train/main/clip-S-seed0.tsv")
    assert job_record_path("res", "tables", "tables") == Path("res/benchmarks/tables/tables.tsv")


def test_the_rules_name_their_job_records_through_the_one_module():
    """No rule spells the records folder or a run's job name itself (they call job_record / run_job_record_of)."""
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        text = smk.read_text()
        assert not re.search(r"seed\{seed\}\.tsv|\"benchmarks\",", text), f"{smk.name} spells a job record's path"


def test_a_job_faster_than_the_records_resolution_reads_as_zero_seconds(tmp_path):
    """Snakemake writes 2 decimals: staging the shipped 0.4 MB WordNet takes a few ms and reads 0.00 (issue 53:
    the smoke run's tables job stopped on it)."""
    root = tmp_path / "benchmarks"
    write(root / "stage_wordnet" / "stage_wordnet.tsv", HEADER + "0.00\t0:00:00\t3.1\t1\t1\t1\t0\t0\t0\t0.00\n")
    (record,) = read_job_records(root)
    assert record.wall_s == 0.0 and record.cpu_s == 0.0


def test_a_record_gives_stage_group_run_and_its_measures(tmp_path):
    root = tmp_path / "benchmarks"
    write(root / "train" / "main" / "argent-tiny-seed1.tsv", HEADER + "12.5\t0:00:12\tNA\t1\t1\t1\t0\t0\t50\t9.5\n"
          + "14.5\t0:00:14\t300\t1\t1\t1\t0\t0\t50\tNA\n\n")
    write(root / "tables" / "tables.tsv", HEADER + "2\t0:00:02\t100\t1\t1\t1\t0\t0\t50\t1\n")
    tables, first, second = read_job_records(root)  # sorted by path
    assert (first.stage, first.group, first.variant, first.size, first.seed) == ("train", "main", "argent", "tiny", 1)
    assert first.wall_s == 12.5 and math.isnan(first.max_rss_mb) and first.cpu_s == 9.5
    assert second.max_rss_mb == 300 and math.isnan(second.cpu_s)  # a repeat: a second row of one job
    assert (tables.stage, tables.group, tables.variant, tables.seed) == ("tables", "", "", None)
    assert read_job_records(root, "tables") == [tables] and read_job_records(tmp_path / "absent") == []


@pytest.mark.parametrize("text, said", [
    ("not a record\n1\n", "not a Snakemake job record"),
    (HEADER, "not a Snakemake job record"),
    ("", "not a Snakemake job record"),
    ("s\th:m:s\nNA\t0:00:01\n", "s (the job's wall seconds) is 'NA', expected a number ≥ 0 on line 2"),
    ("s\th:m:s\n-1\t0:00:00\n", "s (the job's wall seconds) is '-1'"),
    ("s\th:m:s\n3.0\n", "line 2: 1 values under a header of 2"),
])
def test_a_damaged_record_is_named_with_its_line_and_the_fix(tmp_path, text, said):
    path = write(tmp_path / "b" / "train" / "main" / "clip-tiny-seed0.tsv", text)
    with pytest.raises(JobRecordError) as err:
        read_job_record(path, tmp_path / "b")
    assert str(err.value).startswith(str(path)) and said in str(err.value) and "re-run its job" in str(err.value)
