"""One typed, range-checked reader for every file the tables read back (issue 54, item 3): the probe's result
JSON, a run's ``metrics.jsonl`` (the mechanism table), the step-time record, and any evaluation JSON nested
too deep or that is no regular file. A file of the wrong shape is one error naming it; a value outside its
range is marked ``INVALID`` in its cell and named in the footnote, never printed as a number."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import polars as pl
import pytest
import yaml

from argent.cli import explain
from argent.config import ConfigError
from argent.io import ArgentError
from argent.plan.step_record import read_record
from argent.tables.collect import collect, collect_diagnostics
from argent.tables.mechanism import mechanism_markdown, mechanism_rows
from argent.tables.probe import probe_table
from argent.tables.readers import read_evaluation

GOOD_PROBE = {"conditions": [{"name": "leaf_only/none", "coherence_mean": {"mean": 0.4, "ci95": None, "n": 1},
                              "summary": {"test": {"unseen": {
                                  "category_mean_macro_f1": {"mean": 0.62, "ci95": 0.05, "n": 3},
                                  "category_mean_always_no": {"mean": 0.5, "ci95": 0.0, "n": 3}}}}}]}


def _probe(tmp_path: Path, data) -> Path:
    path = tmp_path / "probe" / "main" / "meru-tiny" / "seed0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return tmp_path / "probe"


def _one_line(err: BaseException, *named: str) -> str:
    message = explain(err)  # what `argent tables` prints: one line, exit 2, no traceback
    assert message is not None and "\n" not in message, message
    assert all(n in message for n in named), message
    return message


@pytest.mark.parametrize("data", [[], {}, {"conditions": 5}, {"conditions": []}, {"conditions": [5]},
                                  {"conditions": [{"summary": {}}]},
                                  {"conditions": [{"name": "leaf_only/none", "summary": {"test": []}}]}])
def test_a_probe_result_of_the_wrong_shape_is_one_line_naming_it(tmp_path, data):
    folder = _probe(tmp_path, data)
    with pytest.raises(ArgentError) as err:
        probe_table(folder)
    _one_line(err.value, str(folder / "main" / "meru-tiny" / "seed0.json"), "argent probe")


@pytest.mark.parametrize("bad", [math.nan, -7.5, 7.5, math.inf, 1e308, "0.6", True])
def test_a_probe_value_out_of_its_range_is_marked_never_printed(tmp_path, bad):
    data = json.loads(json.dumps(GOOD_PROBE))
    data["conditions"][0]["summary"]["test"]["unseen"]["category_mean_macro_f1"]["mean"] = bad
    md, records = probe_table(_probe(tmp_path, data))
    row = next(line for line in md.splitlines() if line.startswith("| main/meru-tiny/seed0"))
    assert row.split("|")[3].strip() == "INVALID", row
    assert "category_mean_macro_f1/mean" in md and records[0]["macro_f1"] is None  # the footnote names it
    cells = "\n".join(line for line in md.splitlines() if line.startswith("|"))
    assert not any(token in cells for token in ("-7.500", "7.500", "nan", "inf", "e+", "0.600"))


def test_a_good_probe_result_reads_as_before(tmp_path):
    md, records = probe_table(_probe(tmp_path, GOOD_PROBE))
    assert "| main/meru-tiny/seed0 | leaf_only/none | 0.620 ± 0.050 (n=3) | 0.500 | 0.400 |" in md
    assert "INVALID" not in md and records[0]["macro_f1"] == 0.62


# ---- metrics.jsonl: a trained run is never "not run" ---------------------------------------------------


def _trained_run(tmp_path: Path, metrics) -> Path:
    """A finished meru run (summary.json written) whose metrics.jsonl is ``metrics`` (text, None: a folder)."""
    folder = tmp_path / "runs" / "main" / "meru-tiny" / "seed0"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"config_hash": "0123456789abcdef"}))
    (folder / "config.yaml").write_text(yaml.safe_dump({"variant": {"cone_k": 0.1}}))
    if metrics is None:
        (folder / "metrics.jsonl").mkdir()
    else:
        (folder / "metrics.jsonl").write_text(metrics)
    return tmp_path / "runs"


def _mechanism(runs: Path) -> tuple[str, list[dict]]:
    diag = collect_diagnostics(runs).drop("group")
    rows = mechanism_rows(diag, ["meru"], ["tiny"], {"meru": [0]})
    pl.DataFrame(rows, infer_schema_length=None).write_csv(runs.parent / "mechanism.csv")  # as the tables write it
    return mechanism_markdown(rows), rows


@pytest.mark.parametrize("metrics, said", [("", "metrics.jsonl is empty"), (None, "metrics.jsonl unreadable"),
                                           ("step 600: loss 0.4\nphi/text_image 1.2\n", "not JSON records")])
def test_a_trained_run_whose_metrics_file_gives_nothing_is_not_shown_as_not_run(tmp_path, metrics, said):
    md, rows = _mechanism(_trained_run(tmp_path, metrics))
    assert rows[0]["status"] == "no diagnostics" and said in rows[0]["note"], rows
    assert "not run" not in md and said in md


@pytest.mark.parametrize("bad", ["Infinity", "1e308", "-0.5", '"0.6"', "NaN"])
def test_a_diagnostic_out_of_its_range_is_marked_never_printed(tmp_path, bad):
    record = ('{"step": 8, "diag/collapse/text": %s, "diag/phi/text_image": 1.1, "curv": 0.64, '
              '"diag/norm/text/q50": 0.5}\n') % bad
    md, rows = _mechanism(_trained_run(tmp_path, record))
    row = next(line for line in md.splitlines() if line.startswith("| meru |"))
    share = row.split("|")[4]
    assert "INVALID" in share and "%" not in share.replace("INVALID", ""), row  # no "inf %", no 300 digits
    assert "collapse/text" in md and "1.100" in row  # the valid φ still shown
    cells = "\n".join(line for line in md.splitlines() if line.startswith("|"))
    assert not any(token in cells for token in ("inf", "e+", "1" + "0" * 300, "-50.0", "60.0"))


def test_a_run_with_good_diagnostics_reads_as_before(tmp_path):
    record = '{"step": 8, "diag/collapse/text": 0.6, "diag/phi/text_image": 1.1, "curv": 0.64, "diag/norm/text/q50": 0.5}\n'
    md, rows = _mechanism(_trained_run(tmp_path, record))
    assert rows[0]["status"] == "ok" and rows[0]["collapse_mean"] == pytest.approx(0.6) and "INVALID" not in md


# ---- the step-time record -------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [1e300, 86_401.0])
def test_a_step_time_out_of_range_is_named_not_printed(tmp_path, seconds):
    path = tmp_path / "step_times.json"
    path.write_text(json.dumps({"sizes": {"tiny": {"step_seconds": seconds, "batch_size": 64, "device": "cpu"}}}))
    with pytest.raises(ConfigError) as err:
        read_record(path)
    _one_line(err.value, "cost.step_times", str(path), "sizes.tiny.step_seconds", "out of range")


# ---- any JSON read back: too deep, or no regular file --------------------------------------------------


def _eval_path(tmp_path: Path) -> Path:
    path = tmp_path / "eval" / "main" / "meru-tiny" / "seed0" / "hs_zeroshot.json"
    path.parent.mkdir(parents=True)
    return path


def test_an_evaluation_json_nested_100000_deep_is_one_line_not_a_recursion_error(tmp_path):
    path = _eval_path(tmp_path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ArgentError) as err:
        read_evaluation(path)
    _one_line(err.value, str(path), "nested")
    path.write_text('{"metrics": ' + "{\"a\": " * 70 + "1" + "}" * 70 + "}")  # valid, 71 levels
    with pytest.raises(ArgentError, match="nested more than 64 levels"):
        collect(tmp_path / "eval")


@pytest.mark.timeout(60)
def test_a_fifo_in_place_of_an_evaluation_json_is_refused_not_waited_on(tmp_path):
    path = _eval_path(tmp_path)
    os.mkfifo(path)
    unblock = threading.Timer(20, lambda: open(path, "wb").close())  # the old reader would wait for a writer
    unblock.start()
    try:
        with pytest.raises(ArgentError) as err:
            collect(tmp_path / "eval")
    finally:
        unblock.cancel()
    _one_line(err.value, str(path), "FIFO", "not a regular file")
