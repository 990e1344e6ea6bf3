"""Property-based fuzzing of every reader of a file read back (issue 54, item 3), with Hypothesis: arbitrary
bytes, arbitrary JSON (NaN, ±inf, huge and negative numbers, deep nests, wrong types) as a whole file, and a
valid file with one field replaced by an arbitrary value. The property, for every reader: it returns, or
raises an ``ArgentError`` (one line through argent's error boundary) — never another exception; and where
a reader marks instead of refusing (the probe and mechanism tables), no value outside its range reaches
a cell as a number. Deterministic (``derandomize``): the same cases on every run."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from argent.io import ArgentError
from argent.plan.step_record import read_record
from argent.runs import read_job_record, read_metrics
from argent.runs.documents import read_document
from argent.tables.collect import collect_diagnostics
from argent.tables.mechanism import mechanism_markdown, mechanism_rows
from argent.tables.probe import probe_table
from argent.tables.readers import item_vectors, read_evaluation, read_run_provenance, read_summary

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)

EVALUATION = {"benchmark": "hs_zeroshot", "protocol": "zeroshot", "status": "ok", "variant": "meru", "size": "tiny",
              "seed": 0, "config_hash": "0123456789abcdef", "partial": False,
              "metrics": {"top1": 0.5, "mean_per_class": 0.5, "tie": 1.0}, "counts": {"items": 2, "skipped": {}},
              "items": {"top1": {"ids": ["a", "b"], "values": [0.0, 1.0]}}}
SUMMARY = {"config_hash": "0123456789abcdef", "steps": 2, "skipped_samples": {}, "dropped_samples": {}}
PROVENANCE = {"torch": "2.14.1", "cpu_capability": "AVX2", "gpu": "", "threads": 1, "deterministic_algorithms": False}
PROBE = {"conditions": [{"name": "leaf_only/none", "coherence_mean": {"mean": 0.4},
                         "summary": {"test": {"unseen": {"category_mean_macro_f1": {"mean": 0.6, "ci95": 0.1, "n": 3},
                                                         "category_mean_always_no": {"mean": 0.5}}}}}]}
STEP_TIMES = {"machine": "m", "source": "s", "sizes": {"tiny": {"step_seconds": 0.1, "batch_size": 64,
                                                                "device": "cpu"}}}
DIAGNOSTICS = {"step": 8, "diag/collapse/text": 0.6, "diag/phi/text_image": 1.1, "curv": 0.64,
               "diag/norm/text/q50": 0.5}


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested document (the fields one example replaces)."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, value in items:
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key))
    return out


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def _variants(base: dict) -> st.SearchStrategy:
    """A whole arbitrary document, or ``base`` with one field replaced by an arbitrary value."""
    return JSON | st.builds(lambda path, value: _replace(base, path, value), st.sampled_from(_paths(base)), JSON)


def _write(folder: Path, name: str, doc: Any) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))  # NaN and ±inf as JSON's NaN/Infinity tokens, which json.loads reads
    return path


def _only_argent_errors(read, *args) -> Any:
    try:
        return read(*args)
    except ArgentError:
        return None  # one line, exit 2 (argent/cli.py)


@SETTINGS
@given(st.binary(max_size=300) | st.just(b"[" * 5000) | st.just(b'{"a": ' * 100 + b"1" + b"}" * 100))
def test_any_bytes_are_a_document_or_one_error(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.json"
        path.write_bytes(data)
        _only_argent_errors(read_document, path)


@SETTINGS
@given(_variants(EVALUATION))
def test_the_evaluation_reader_returns_or_names_the_file(doc):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "hs_zeroshot.json", doc)
        data = _only_argent_errors(read_evaluation, path)
        if data is not None:
            for value in data["metrics"].values():  # what the tables print: in range, or null (n/a)
                assert value is None or isinstance(value, list) or (math.isfinite(value) and -1e15 <= value <= 1e15)
            _only_argent_errors(item_vectors, data, path)


@SETTINGS
@given(_variants(SUMMARY), _variants(PROVENANCE))
def test_the_summary_and_provenance_readers_return_or_name_the_file(summary, provenance):
    with tempfile.TemporaryDirectory() as tmp:
        _only_argent_errors(read_summary, _write(Path(tmp), "summary.json", summary))
        _write(Path(tmp), "provenance.json", provenance)
        _only_argent_errors(read_run_provenance, Path(tmp))


@SETTINGS
@given(_variants(PROBE))
@example([])
@example({"conditions": 5})
@example(_replace(PROBE, ("conditions", 0, "summary", "test", "unseen", "category_mean_macro_f1", "mean"), -7.5))
def test_the_probe_reader_marks_what_is_out_of_range(doc):
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), "probe/main/meru-tiny/seed0.json", doc)
        table = _only_argent_errors(probe_table, Path(tmp) / "probe")
        if table is None:
            return
        for record in table[1]:
            for key, low, high in (("macro_f1", 0, 1), ("always_no", 0, 1), ("coherence", -1, 1)):
                value = record[key]
                assert value is None or (math.isfinite(value) and low <= value <= high), (key, value)
        cells = [line for line in table[0].splitlines() if line.startswith("| main/")]
        assert not any(t in c for c in cells for t in ("nan", "inf", "e+")), cells


@SETTINGS
@given(_variants(DIAGNOSTICS), st.text(max_size=40))
@example(_replace(DIAGNOSTICS, ("diag/collapse/text",), math.inf), "")
@example(_replace(DIAGNOSTICS, ("diag/phi/text_image",), 1e308), "text diagnostics: all good")
def test_the_diagnostics_reader_never_stops_the_table_nor_prints_a_bad_value(record, junk):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs" / "main" / "meru-tiny" / "seed0"
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps(SUMMARY))
        (folder / "metrics.jsonl").write_text(f"{junk}\n{json.dumps(record)}\n")
        diag = collect_diagnostics(Path(tmp) / "runs").drop("group")
        rows = mechanism_rows(diag, ["meru"], ["tiny"], {"meru": [0]})
        md = mechanism_markdown(rows)
        assert rows[0]["status"] != "not run"  # a trained run: diagnostics, or said why there are none
        for row in rows:
            for key, low, high in (("collapse_mean", 0, 1), ("phi_mean", 0, math.pi)):
                value = row.get(key)
                assert value is None or (math.isfinite(value) and low <= value <= high), (key, value)
        cells = [line for line in md.splitlines() if line.startswith("| meru")]
        assert not any(t in c for c in cells for t in ("nan", "inf", "e+")), cells
        _only_argent_errors(read_metrics, folder / "metrics.jsonl")


@SETTINGS
@given(_variants(STEP_TIMES))
@example(_replace(STEP_TIMES, ("sizes", "tiny", "step_seconds"), 1e300))  # issue 54: a 300-digit CPU-hour estimate
def test_the_step_time_reader_returns_a_measured_record_or_names_the_file(doc):
    with tempfile.TemporaryDirectory() as tmp:
        record = _only_argent_errors(read_record, _write(Path(tmp), "step_times.json", doc))
        for size in (record.sizes.values() if record else []):
            assert 0 < size.step_seconds <= 86_400 and 1 <= size.batch_size <= 2**31


@SETTINGS
@given(st.lists(st.lists(st.text(alphabet=st.characters(blacklist_characters="\t\r\n\x00"), max_size=10),
                         min_size=1, max_size=10), max_size=4))
def test_the_job_record_reader_returns_or_names_the_file(rows):
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "benchmarks"
        path = records / "train" / "main" / "meru-tiny-seed0.tsv"
        path.parent.mkdir(parents=True)
        header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"
        path.write_text("\n".join([header, *("\t".join(r) for r in rows)]) + "\n")
        for row in _only_argent_errors(read_job_record, path, records) or []:
            assert math.isnan(row.wall_s) or 0 < row.wall_s <= 1e15


@pytest.mark.parametrize("reader", [read_document, read_evaluation, read_summary])
def test_each_reader_refuses_a_folder_in_place_of_its_file(tmp_path, reader):
    (tmp_path / "doc.json").mkdir()
    with pytest.raises(ArgentError, match="a folder, not a regular file"):
        reader(tmp_path / "doc.json")
