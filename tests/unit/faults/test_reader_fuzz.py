"""Every field of every file the tables and the cost read, replaced by each wrong type, NaN, ±inf, a
negative and a huge value (issue 45 A): no traceback (only the expected ``ArgentError``, naming the
file and the key), and no silent cell (an invalid value never reaches the output as a number or
"n/a"; a field the tables do not read leaves the output as it was). The valid ranges below are the
test's own, written from docs/reliability.md and the evaluator's ``units``, not read from the code."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from argent.config.groups import RunKey
from argent.io import ArgentError
from argent.plan.cost import cost_section, records, step_time
from argent.runs import eval_dir, read_job_records, run_dir
from argent.tables.collect import collect, collect_skips, skips_footnote
from argent.tables.cost import cost_rows, markdown
from argent.tables.items import collect_items
from argent.tables.paper import TableInput, layout
from argent.tables.paper import markdown as table_markdown
from argent.tables.run import hardware_note
from argent.tablespec.section import Column, Row

WRONG = ["x", [1], {"a": 1}, True, None, math.nan, math.inf, -math.inf, -7.5, 1e308]
WRONG_TEXT = ["x", "nan", "inf", "-inf", "-7.5", "1e308", "NA"]  # a TSV cell holds text only
LARGEST = 1e15  # docs/reliability.md: above any measured value


def number(v: Any, low: float, high: float) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and low <= v <= high


def count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53


def text(v: Any) -> bool:
    return isinstance(v, str)


def optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def counts_object(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(count(n) for n in v.values()))


def fraction(v: Any) -> bool:
    return number(v, 0, 1)


def nothing(v: Any) -> bool:  # no replacement of this field is valid
    return False


ZS = {"benchmark": "zs", "protocol": "zeroshot", "geometry": "lorentz", "status": "ok",
      "metrics": {"top1": 0.5, "mean_per_class": 0.5, "n_classes_evaluated": 2, "tie": 1.5},
      "counts": {"n_items": 2, "skipped": {"corrupt_image": 1}, "dropped": {}, "truncated_texts": 0},
      "units": "fractions", "entry": {"root": "data/zs", "limit": 0}, "entry_hash": "e1", "elapsed_s": 1.5,
      "partial": True, "run": "results/runs/main/clip-tiny/seed0", "config_hash": "h1", "variant": "clip",
      "size": "tiny", "seed": 0, "items": {"top1": {"ids": ["a", "b"], "values": [1, 0]}}}
HC = {"benchmark": "hc", "protocol": "hierarcaps", "status": "ok", "partial": False,
      "metrics": {"kendall_tau": -0.5, "kendall_tau_rows": 4, "kendall_tau_undefined_rows": 0,
                  "level_order_exact_share": 0.25, "threshold_precision": 0.5, "threshold_recall": 0.75,
                  "mean_radius_by_level": [1.0, 2.0]}, "counts": {"n_items": 4}, "radius": "d(O, x)"}
PEP = {"benchmark": "pep", "protocol": "pep", "status": "n/a", "partial": False,
       "metrics": {"auc": None, "ap": None}, "counts": {"n_items": 0}, "reason": "no cones"}
SUMMARY = {"run": "clip-tiny/seed0", "steps": 2, "skipped_steps": 0, "config_hash": "h1", "identity_version": 1,
           "final": {"loss": 1.0}, "mean_samples_per_s": 10.0, "skipped_samples": {"corrupt_image": 2},
           "dropped_samples": {"no_box_kept": 1}}
SEGMENT = {"torch": "2.9", "cpu_capability": "AVX2", "gpu": "", "cuda": "", "blas": "BLAS mkl", "threads": 2,
           "deterministic_algorithms": True, "cudnn_deterministic": False, "machine": "x86_64", "processor": "x",
           "python": "3.12", "hardware_class": "CPU AVX2, no GPU, torch 2.9"}
PROVENANCE = {**SEGMENT, "earlier": [{**SEGMENT, "cpu_capability": "AVX512"}]}
STEP_TIMES = {"machine": "m", "source": "s", "sizes": {"tiny": {"step_seconds": 0.5, "batch_size": 8, "device": "cpu"}}}
TSV = {"s": "12.5", "h:m:s": "0:00:12", "max_rss": "300", "max_vms": "1", "max_uss": "1", "max_pss": "1",
       "io_in": "0", "io_out": "0", "mean_load": "50", "cpu_time": "9.5"}

EVAL_RULES: dict[tuple, Callable[[Any], bool]] = {  # key path ("*": any key or index) -> valid replacement
    (): nothing, ("metrics",): nothing,
    ("metrics", "top1"): fraction, ("metrics", "mean_per_class"): fraction, ("metrics", "level_order_exact_share"): fraction,
    ("metrics", "threshold_precision"): fraction, ("metrics", "threshold_recall"): fraction,
    ("metrics", "tie"): lambda v: number(v, 0, LARGEST), ("metrics", "kendall_tau"): lambda v: number(v, -1, 1),
    ("metrics", "n_classes_evaluated"): count, ("metrics", "kendall_tau_rows"): count,
    ("metrics", "kendall_tau_undefined_rows"): count,
    ("metrics", "mean_radius_by_level"): lambda v: isinstance(v, list) and all(number(x, 0, LARGEST) for x in v),
    ("metrics", "mean_radius_by_level", "*"): lambda v: number(v, 0, LARGEST),
    ("counts",): lambda v: v is None or (isinstance(v, dict) and all(count(n) for n in v.values())),
    ("counts", "skipped"): counts_object, ("counts", "dropped"): counts_object, ("counts", "*"): count,
    ("counts", "skipped", "*"): count, ("counts", "dropped", "*"): count,
    ("partial",): optional(lambda v: isinstance(v, bool)), ("status",): optional(lambda v: v in ("ok", "n/a")),
    ("config_hash",): optional(lambda v: text(v) and bool(v.strip())), ("variant",): optional(lambda v: v == "clip"),
    ("size",): optional(lambda v: v == "tiny"), ("seed",): optional(lambda v: v == 0),
    ("protocol",): optional(lambda v: v in ("zeroshot", "hierarcaps", "pep")), ("benchmark",): optional(text),
    ("items",): lambda v: v is None, ("items", "*"): nothing, ("items", "*", "*"): nothing,
    ("items", "*", "ids", "*"): text, ("items", "*", "values", "*"): nothing,  # a changed value breaks its mean
}
PEP_RULES = {**EVAL_RULES, ("metrics", "auc"): optional(fraction), ("metrics", "ap"): optional(fraction)}
SUMMARY_RULES = {(): lambda v: isinstance(v, dict),  # {}: a summary without counts or hash (tests write one)
                  ("skipped_samples",): counts_object, ("dropped_samples",): counts_object,
                 ("skipped_samples", "*"): count, ("dropped_samples", "*"): count,
                 ("config_hash",): optional(lambda v: text(v) and bool(v.strip()))}
SEGMENT_RULES = {**{(k,): optional(text) for k in SEGMENT if isinstance(SEGMENT[k], str)},
                 ("threads",): optional(count), ("deterministic_algorithms",): optional(lambda v: isinstance(v, bool)),
                 ("cudnn_deterministic",): optional(lambda v: isinstance(v, bool))}
PROVENANCE_RULES = {(): lambda v: isinstance(v, dict), **SEGMENT_RULES, ("earlier",): lambda v: v is None or (
    isinstance(v, list) and all(isinstance(s, dict) for s in v)), ("earlier", "*"): lambda v: isinstance(v, dict),
    **{("earlier", "*", *k): rule for k, rule in SEGMENT_RULES.items()}}
STEP_RULES = {(): nothing, ("sizes",): nothing, ("sizes", "*"): nothing, ("machine",): text, ("source",): text,
              ("sizes", "*", "step_seconds"): lambda v: number(v, 0, 86_400) and v > 0,  # a measured step: a day at most (issue 54)
              ("sizes", "*", "batch_size"): lambda v: count(v) and v >= 1, ("sizes", "*", "device"): text}


def tsv_rule(column: str, value: str) -> bool | None:
    """Whether a job record's cell is valid (None: a column the cost does not read)."""
    try:
        parsed = float(value)
    except ValueError:
        parsed = math.nan
    if column == "s":
        return 0 < parsed <= LARGEST
    if column in ("max_rss", "cpu_time"):
        return value in ("NA", "", "-") or 0 <= parsed <= LARGEST
    return None


def rule_for(rules: dict[tuple, Callable[[Any], bool]], path: tuple) -> Callable[[Any], bool] | None:
    """The rule of the most specific pattern (fewest "*") matching ``path``; None: a field the tables
    do not read."""
    matching = [p for p in rules if len(p) == len(path) and all(a in ("*", b) for a, b in zip(p, path))]
    return rules[min(matching, key=lambda p: p.count("*"))] if matching else None


def nodes(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every key path of a JSON value, containers included (the root is ())."""
    yield path
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        yield from nodes(child, (*path, key))


def replaced(data: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(data)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return out


class Results:
    """One results folder holding one file of each kind; ``render`` runs the readers and formatters."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = {"zs": eval_dir(root, "main", "clip", "tiny", 0) / "zs.json",
                      "hc": eval_dir(root, "main", "clip", "tiny", 0) / "hc.json",
                      "pep": eval_dir(root, "main", "clip", "tiny", 0) / "pep.json",
                      "summary": run_dir(root, "main", "clip", "tiny", 0) / "summary.json",
                      "provenance": run_dir(root, "main", "clip", "tiny", 0) / "provenance.json",
                      "step_times": root / "bench" / "step_times.json",
                      "record": root / "benchmarks" / "train" / "main" / "clip-tiny-seed0.tsv"}
        self.content = {"zs": ZS, "hc": HC, "pep": PEP, "summary": SUMMARY, "provenance": PROVENANCE,
                        "step_times": STEP_TIMES}
        for name, data in self.content.items():
            self.write(name, data)
        self.write_record(TSV)

    def write(self, name: str, data: Any) -> None:
        self.files[name].parent.mkdir(parents=True, exist_ok=True)
        self.files[name].write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them

    def write_record(self, row: dict[str, str]) -> None:
        self.files["record"].parent.mkdir(parents=True, exist_ok=True)
        self.files["record"].write_text("\t".join(row) + "\n" + "\t".join(row.values()) + "\n")

    def render(self, kind: str) -> str:
        """What the readers of ``kind``'s file put into the tables (cells, footnotes, classes, cost)."""
        if kind in ("zs", "hc", "pep", "summary"):
            long = collect(self.root / "eval").drop("group")
            columns = [Column(f"{b}/{m}", b, m) for b, d in (("zs", ZS), ("hc", HC), ("pep", PEP)) for m in d["metrics"]]
            lines, _ = layout(TableInput.build(long, ["tiny"], {"clip": [0]}), [Row("clip", "clip")], columns)
            return "\n".join([table_markdown(lines), skips_footnote(collect_skips(self.root)),
                              repr(collect_items(self.root / "eval"))])
        if kind == "provenance":  # the mixed-hardware footnote: this run trained on two classes
            key = RunKey("main", "clip", "tiny", 0)
            return hardware_note(self.root, SimpleNamespace(home={key: key}), ["main/clip"])
        if kind == "record":
            return "".join(markdown(rows, "t") for rows in cost_rows(read_job_records(self.root / "benchmarks")))
        cost = cost_section({"cost": {"step_times": str(self.files["step_times"])}})
        return repr(step_time(cost, "tiny", 8, "cpu", records(cost, self.root, self.root)))


def mutations() -> Iterator[tuple[str, tuple, Any, bool | None]]:
    """(file, key path, replacement, valid: True/False, None for a field the tables do not read)."""
    rules = {"zs": EVAL_RULES, "hc": EVAL_RULES, "pep": PEP_RULES, "summary": SUMMARY_RULES,
             "provenance": PROVENANCE_RULES, "step_times": STEP_RULES}
    content = {"zs": ZS, "hc": HC, "pep": PEP, "summary": SUMMARY, "provenance": PROVENANCE, "step_times": STEP_TIMES}
    for name, data in content.items():
        for path in nodes(data):
            rule = rule_for(rules[name], path)
            for new in WRONG:
                yield name, path, new, None if rule is None else rule(new)
    for column in TSV:
        for new in WRONG_TEXT:
            yield "record", (column,), new, tsv_rule(column, new)


def test_no_wrong_value_reaches_a_cell_silently_or_as_a_traceback(tmp_path):
    results = Results(tmp_path)
    baseline = {kind: results.render(kind) for kind in ("zs", "provenance", "record", "step_times")}
    assert "AVX512" in baseline["provenance"] and "| 0.50 (n=1) † |" in baseline["zs"] and "| n/a |" in baseline["zs"] and "corrupt_image" in baseline["zs"]
    silent, refused, tried = [], [], 0
    for name, path, new, valid in mutations():
        tried += 1
        if name == "record":
            results.write_record({**TSV, path[0]: new})
        else:
            results.write(name, replaced(results.content[name], path, new))
        shown = "zs" if name in ("hc", "pep", "summary") else name
        try:
            out = results.render(shown)
        except ArgentError as err:  # anything else is a traceback: the test fails with it
            keys = [str(k) for k in path if isinstance(k, str)][:2]
            assert str(results.files[name]) in str(err) and all(k in str(err) for k in keys), (name, path, new, err)
            if valid:
                refused.append((name, path, new, str(err)))
        else:
            if valid is False or (valid is None and out != baseline[shown]):
                silent.append((name, path, new))
        finally:
            if name == "record":
                results.write_record(TSV)
            else:
                results.write(name, results.content[name])
    assert not silent, f"{len(silent)} wrong value(s) read without a word, e.g. {silent[:5]}"
    assert not refused, f"{len(refused)} valid value(s) refused, e.g. {refused[:3]}"
    assert tried >= 1200

