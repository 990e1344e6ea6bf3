"""The cases a fault probe of the tables' inputs found (issue 45 A), each now one error naming the
file and the key, or a cell that says what it is; a null the protocol itself leaves undefined stays
"n/a". The sweep over every field is tests/unit/faults/test_reader_fuzz.py."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from argent.config.groups import RunKey
from argent.io import ArgentError
from argent.runs import JobRecordError, eval_dir, read_job_records, run_dir
from argent.tables.collect import check_run_identities, collect, collect_skips
from argent.tables.cost import write_cost_tables
from argent.tables.paper import TableInput, layout
from argent.tables.run import hardware_note
from argent.tablespec.section import Column, Row
from tests.fixtures import claims_config, write_eval_results

KEY = RunKey("main", "clip", "tiny", 0)
ZS = {"benchmark": "zs", "protocol": "zeroshot", "status": "ok", "partial": False, "variant": "clip", "size": "tiny",
      "seed": 0, "metrics": {"top1": 0.5, "mean_per_class": 0.5, "n_classes_evaluated": 2},
      "counts": {"n_items": 2, "skipped": {}, "dropped": {}}}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def evaluation(root: Path, name: str = "zs", **change: object) -> Path:
    return write(eval_dir(root, "main", "clip", "tiny", 0) / f"{name}.json", {**ZS, **change})


def cell(root: Path, benchmark: str = "zs", metric: str = "top1") -> str:
    """The main table's cell of main/clip-tiny at ``benchmark``/``metric`` (scale 100)."""
    long = collect(root / "eval").drop("group")
    lines, _ = layout(TableInput.build(long, ["tiny"], {"clip": [0]}), [Row("clip", "clip")],
                      [Column("c", benchmark, metric, 100)])
    return lines[0]["c"]


@pytest.mark.parametrize("value, said", [
    (math.nan, "metrics/top1: nan is not finite; expected a fraction in [0, 1]"),  # was "n/a"
    (math.inf, "metrics/top1: inf is not finite"),                                 # was "inf (n=1)"
    (1e308, "metrics/top1: 1e+308 is out of range; expected a fraction in [0, 1]"),
    (-7.5, "metrics/top1: -7.5 is out of range; expected a fraction in [0, 1]"),   # was "-750.00 (n=1)"
    (None, "metrics/top1: null in an evaluation whose status is 'ok'"),            # the evaluator's NaN
    ([0.5], "metrics/top1: [0.5] is not a fraction in [0, 1]"),                    # was "not evaluated"
])
def test_a_metric_out_of_its_range_is_named_not_printed(tmp_path, value, said):
    path = evaluation(tmp_path, metrics={**ZS["metrics"], "top1": value})
    with pytest.raises(ArgentError, match=r"re-run the evaluate job") as err:
        cell(tmp_path)
    assert str(err.value).startswith(f"{path}: {said}")


def test_a_nan_top1_stops_argent_tables_with_one_line(tmp_path, argent):
    """Through the verb: one message naming the file and the key, exit 2, no traceback."""
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump({"margins": {"zeroshot": {"delta": 1.0, "why": "t"}}, "claims": []}))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**claims_config(claims), "results": str(tmp_path / "results")}))
    write_eval_results(tmp_path / "results")
    bad = tmp_path / "results" / "eval" / "main" / "clip-tiny" / "seed1" / "hs_zeroshot.json"
    bad.write_text(json.dumps({"benchmark": "hs_zeroshot", "metrics": {"top1": math.nan}}))
    code, err = argent("tables", "--config", config, "--results", tmp_path / "results", "--no-default")
    assert code == 2 and f"{bad}: metrics/top1: nan is not finite" in err and "Traceback" not in err


def test_a_flag_that_is_not_a_boolean_is_named(tmp_path):
    path = evaluation(tmp_path, partial="yes")  # was read as "not partial": no †
    with pytest.raises(ArgentError, match=rf"{path}: partial: 'yes' is not true or false"):
        cell(tmp_path)


def test_a_count_that_is_text_is_named_not_dropped_from_the_footnote(tmp_path):
    path = evaluation(tmp_path, counts={"skipped": {"corrupt_image": "3"}})
    with pytest.raises(ArgentError, match=rf"{path}: counts/skipped/corrupt_image: '3' is not a number"):
        collect_skips(tmp_path)
    path.unlink()
    summary = write(run_dir(tmp_path, "main", "clip", "tiny", 0) / "summary.json", {"dropped_samples": {"no_box": "2"}})
    with pytest.raises(ArgentError, match=rf"{summary}: dropped_samples/no_box: '2' is not a number"):
        collect_skips(tmp_path)
    write(summary, {"skipped_samples": ["corrupt_image", 3]})  # was an AttributeError traceback
    with pytest.raises(ArgentError, match=rf"{summary}: skipped_samples: expected an object of counts by reason"):
        collect_skips(tmp_path)


def test_an_empty_evaluation_json_is_named_not_read_as_not_evaluated(tmp_path):
    path = write(eval_dir(tmp_path, "main", "clip", "tiny", 0) / "zs.json", {})
    with pytest.raises(ArgentError, match=rf"{path}: no 'metrics'"):
        cell(tmp_path)
    evaluation(tmp_path, metrics={"mean_per_class": 0.5})  # a zero-shot result without its top-1
    with pytest.raises(ArgentError, match=r"zs.json: metrics: no \['top1'\]"):
        cell(tmp_path)


@pytest.mark.parametrize("name, value", [("summary.json", 12345), ("zs.json", ["h1"])])
def test_a_hash_that_is_no_text_is_named_not_skipped_by_the_identity_check(tmp_path, name, value):
    folder = run_dir(tmp_path, "main", "clip", "tiny", 0) if name == "summary.json" else eval_dir(tmp_path, "main", "clip",
                                                                                                 "tiny", 0)
    path = write(folder / name, {**(ZS if name == "zs.json" else {}), "config_hash": value})
    with pytest.raises(ArgentError, match=re.escape(f"{path}: config_hash: {value!r}")):
        check_run_identities(SimpleNamespace(trained=[KEY]), tmp_path, tmp_path)  # no hash is planned: never reached


@pytest.mark.parametrize("record, said", [
    (["CPU AVX2"], "expected a run's provenance record (a JSON object), got a JSON array"),
    ({"torch": "2.9", "earlier": "AVX512 machine"}, "earlier: expected a list of the earlier segments' records"),
    ({"torch": "2.9", "earlier": [{"gpu": 3}]}, "earlier[0]: gpu: 3 is not text"),
    ({"torch": 2.9}, "torch: 2.9 is not text"),
])
def test_a_provenance_record_of_the_wrong_shape_is_named(tmp_path, record, said):
    """Each was an AttributeError traceback of the tables job, or a class named after a number."""
    folder = run_dir(tmp_path, "main", "clip", "tiny", 0)
    write(folder / "summary.json", {})
    path = write(folder / "provenance.json", record)
    with pytest.raises(ArgentError) as err:
        hardware_note(tmp_path, SimpleNamespace(home={KEY: KEY}), ["main/clip"])
    assert str(err.value).startswith(str(path)) and said in str(err.value)


@pytest.mark.parametrize("column, value", [("cpu_time", "-5"), ("max_rss", "inf"), ("cpu_time", "lots")])
def test_a_job_record_value_out_of_range_is_named_not_printed_in_the_cost(tmp_path, column, value):
    row = {"s": "10", "h:m:s": "0:00:10", "max_rss": "300", "cpu_time": "9", column: value}
    path = write(tmp_path / "benchmarks" / "train" / "main" / "clip-tiny-seed0.tsv",
                 "\t".join(row) + "\n" + "\t".join(row.values()) + "\n")
    with pytest.raises(JobRecordError, match=rf"{path}, line 2: {column} is '{value}', expected a number in \[0, "):
        write_cost_tables(tmp_path / "benchmarks", tmp_path / "tables")
    assert not (tmp_path / "tables").exists()
    write(path, "s\tmax_rss\tcpu_time\n10\tNA\t-\n")  # Snakemake's "not measured" stays "–"
    assert math.isnan(read_job_records(tmp_path / "benchmarks")[0].cpu_s)


def test_a_null_the_protocol_leaves_undefined_stays_n_a(tmp_path):
    """PEP of a Euclidean model (status n/a), a Kendall τ over no row with a defined τ, and a file
    without a status (hand-written, or older than the field) read as before."""
    evaluation(tmp_path, "pep", protocol="pep", status="n/a", metrics={"auc": None, "ap": None})
    evaluation(tmp_path, "hc", protocol="hierarcaps", metrics={
        "kendall_tau": None, "kendall_tau_rows": 0, "kendall_tau_undefined_rows": 4,
        "threshold_precision": 0.5, "threshold_recall": 0.5, "mean_radius_by_level": [1.0, 2.0]})
    evaluation(tmp_path, "old", protocol=None, status=None, metrics={"auc": None})
    assert cell(tmp_path, "pep", "auc") == cell(tmp_path, "hc", "kendall_tau") == cell(tmp_path, "old", "auc") == "n/a"
    evaluation(tmp_path, "hc", protocol="hierarcaps", metrics={
        "kendall_tau": None, "kendall_tau_rows": 3, "threshold_precision": 0.5, "threshold_recall": 0.5})
    with pytest.raises(ArgentError, match=r"hc.json: metrics/kendall_tau: null in an evaluation whose status is 'ok'"):
        cell(tmp_path)
