"""Inputs of the tables as long polars frames, and what the workflow config asked for.

- ``collect``: results/eval/<group>/<variant>-<size>/seed<k>/<benchmark>.json -> one row per metric.
- ``collect_diagnostics``: results/runs/<group>/<variant>-<size>/seed<k>/metrics.jsonl -> the
  trainer's ``diag/*`` values at the last step that logged them (the end of training).
- ``listed_runs``: the frames re-keyed by the runs the config's groups list: the ``variant`` column
  becomes ``<group>/<variant>``, and a run a group borrows (argent/plan/groups.py) appears under
  both groups. Tables name their rows the same way (a bare name: the table's group).
- ``configured_seeds``: the seeds the config trains per ``<group>/<variant>``, so that a table can
  say when a cell has fewer.
- ``collect_skips``: the samples each training run and each evaluation skipped or dropped, by
  reason (nonzero only), for the tables' footnote.
- ``check_run_identities``: every summary and evaluation of a run the plan trains carries that run's
  identity hash (``argent.plan.targets.planned_hash``), else the tables stop naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from argent.io import ReadError, flatten
from argent.plan.groups import Plan
from argent.plan.targets import check_stamp
from argent.runs import SUMMARY, Results, RunFolder, eval_dir, run_dir, run_parts
from argent.tables.readers import read_evaluation, read_summary
from argent.tables.run_readers import read_diagnostics

LONG_SCHEMA = {"group": pl.Utf8, "variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64, "benchmark": pl.Utf8, "metric": pl.Utf8,
               "value": pl.Float64, "partial": pl.Boolean}  # partial: the evaluation JSON says so (marked † in the tables)
DIAG_SCHEMA = {"group": pl.Utf8, "variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64, "step": pl.Int64, "key": pl.Utf8,
               "value": pl.Float64,
               "note": pl.Utf8}  # a trained run's word on its diagnostics (none to read; a value out of range)
INVALID_KEY = "invalid:"  # the key of a diagnostic left out for its value (``note`` says why)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def collect(eval_dir: Path) -> pl.DataFrame:
    """One row per (group, variant, size, seed, benchmark, metric) with a numeric or null value."""
    rows = []
    for path in sorted(eval_dir.glob("*/*/seed*/*.json")):
        group, variant, size, seed = run_parts(path.parent)
        data = read_evaluation(path)  # a torn or malformed file is an error naming it, before any table is written
        check_identity(path, data, variant, size, seed)
        for metric, value in flatten(data["metrics"], sep="/").items():
            if not isinstance(value, list):  # a per-level profile is no cell; the rest is checked, or null = n/a
                rows.append({"group": group, "variant": variant, "size": size, "seed": seed, "benchmark": path.stem,
                             "metric": metric, "value": None if value is None else float(value),
                             "partial": data.get("partial") is True})
    return pl.DataFrame(rows, schema=LONG_SCHEMA)


def check_run_identities(plan: Plan, results: Path, base_dir: Path) -> None:
    """Every run the plan trains: its ``summary.json`` and each evaluation JSON in its folder must carry
    the identity hash the plan trains it with (a run trained into the folder by hand with another
    config, variant or ``--name`` carries another): else an ``IdentityError`` naming the file, the
    folder, both hashes and the fix. A file that records no hash is not compared."""
    planned: dict = {}
    for key in plan.trained:
        summary = run_dir(results, key.group, key.variant, key.size, key.seed) / SUMMARY
        files = [summary] if summary.is_file() else []
        files += sorted(eval_dir(results, key.group, key.variant, key.size, key.seed).glob("*.json"))
        for path in files:
            # a number or a list where the hash should be is an error here, not a file that skips the check
            found = (read_summary(path) if path.name == SUMMARY else read_evaluation(path)).get("config_hash")
            check_stamp(path, found, plan, key, base_dir, results, planned)


def check_identity(path: Path, data: dict[str, Any], variant: str, size: str, seed: int) -> None:
    """A row is labelled by what the run is, not by where it lies: an evaluation whose own record
    (variant, size, seed, written by ``argent evaluate``) disagrees with its folder stops the tables."""
    recorded = {"variant": data.get("variant"), "size": data.get("size"), "seed": data.get("seed")}
    placed = {"variant": variant, "size": size, "seed": seed}
    wrong = [f"{k} {recorded[k]!r} (folder: {placed[k]!r})" for k in placed if recorded[k] is not None and recorded[k] != placed[k]]
    if wrong:
        raise ReadError(f"{path}: the evaluation records {', '.join(wrong)}; it was moved or copied into another "
                         f"run's folder. Move it back, or re-run `argent evaluate` on the run this folder names")


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {str(k): n for k, n in counts.items() if n}


def collect_skips(results: Path) -> list[dict[str, Any]]:
    """One row per (run, source, kind, reason) with a nonzero count: ``source`` is ``training`` (the
    run's summary.json) or a benchmark (its evaluation JSON); ``kind`` is skipped or dropped."""
    rows: list[dict[str, Any]] = []

    def add(folder: Path, source: str, kind: str, counts: dict[str, int]) -> None:
        group, variant, size, seed = run_parts(folder)
        rows.extend({"run": f"{group}/{variant}-{size}/seed{seed}", "source": source, "kind": kind, "reason": reason,
                     "n": n} for reason, n in _nonzero(counts).items())

    for path in sorted(Results(results).runs.glob(f"*/*/seed*/{SUMMARY}")):
        summary = read_summary(path)  # counts checked: a string or a negative count is an error naming it
        for kind in ("skipped", "dropped"):
            add(path.parent, "training", kind, summary.get(f"{kind}_samples") or {})
    for path in sorted(Results(results).eval.glob("*/*/seed*/*.json")):
        counts = read_evaluation(path).get("counts") or {}  # likewise
        for kind in ("skipped", "dropped"):
            add(path.parent, path.stem, kind, counts.get(kind) or {})
    return rows


def skips_footnote(rows: list[dict[str, Any]]) -> str:
    """Markdown that names every nonzero skip count, or "" when every input was read whole."""
    if not rows:
        return ""
    lines = ["**Partial input: samples skipped or dropped** (by the bad-data policy; the cells above were "
             "computed without them):", "", "| run | source | kind | reason | n |", "|---|---|---|---|---|"]
    lines += [f"| {r['run']} | {r['source']} | {r['kind']} | {r['reason']} | {r['n']} |" for r in rows]
    return "\n".join(lines) + "\n"


def last_diagnostics(metrics_jsonl: Path, prefix: str = "diag/", also: tuple[str, ...] = ("curv",)
                     ) -> tuple[int, dict[str, float]] | None:
    """(step, {key without prefix: value}) of the last record that carries ``prefix`` keys, plus
    the keys in ``also`` (unprefixed, e.g. the curvature) from that same record; the values checked
    (argent.tables.run_readers.read_diagnostics: one out of its range is left out)."""
    found = read_diagnostics(metrics_jsonl, prefix, also)
    return (found.step, found.values) if found.values else None


def collect_diagnostics(runs_dir: Path) -> pl.DataFrame:
    """The end-of-training diagnostics of every run folder, one row per (run, key). A trained run (its
    summary.json written) whose metrics.jsonl gives none (empty, not a file, text) gets one row with a
    ``note`` and no key, so the mechanism table says so instead of "not run"; a value outside its range
    is a row keyed ``invalid:<key>`` with no value and its ``note`` (argent.tables.run_readers)."""
    rows = []
    folders = {p.parent for p in runs_dir.glob("*/*/seed*/metrics.jsonl")}
    folders |= {p.parent for p in runs_dir.glob(f"*/*/seed*/{SUMMARY}")}
    for folder in sorted(folders):
        try:
            group, variant, size, seed = run_parts(folder)
        except ValueError:
            continue
        found = read_diagnostics(RunFolder(folder).metrics)
        run = {"group": group, "variant": variant, "size": size, "seed": seed, "step": found.step}
        if not found.values:
            if (folder / SUMMARY).exists():  # trained: say why there is nothing to show
                rows.append({**run, "key": "", "value": None, "note": f"{folder}: {found.note}"})
            continue
        diag = dict(found.values)
        cone_k = _run_cone_k(RunFolder(folder))
        if cone_k is not None:
            diag["cone_k"] = cone_k
        rows += [{**run, "key": k, "value": v, "note": None} for k, v in diag.items()]
        # keyed apart (INVALID_KEY + key), so that a reader of the values by key never meets the null
        rows += [{**run, "key": INVALID_KEY + key, "value": None, "note": problem} for key, problem in found.problems]
    return pl.DataFrame(rows, schema=DIAG_SCHEMA)


def _run_cone_k(folder: RunFolder) -> float | None:
    """The cone constant K the run used (its resolved config), for the aperture at a norm."""
    value = (folder.stored_config().get("variant") or {}).get("cone_k")
    return float(value) if _is_number(value) else None


def listed_runs(frame: pl.DataFrame, plan: Plan) -> pl.DataFrame:
    """``frame`` (with a ``group`` column) re-keyed by the runs the plan lists: ``variant`` becomes
    ``<group>/<variant>`` of the listing group, a borrowed run is repeated under each group that
    lists it, and a folder no group lists (left from another config) is dropped."""
    keys = [{"home": home.group, "variant": key.variant, "size": key.size, "seed": key.seed, "listed": key.qualified}
            for key, home in plan.home.items()]
    if not keys or frame.is_empty():
        return frame.drop("group")
    index = pl.DataFrame(keys, schema={"home": pl.Utf8, "variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64,
                                       "listed": pl.Utf8})
    joined = frame.join(index, left_on=["group", "variant", "size", "seed"], right_on=["home", "variant", "size", "seed"])
    columns = [c for c in frame.columns if c != "group"]
    return joined.with_columns(pl.col("listed").alias("variant")).select(columns).sort(["variant", "size", "seed"])


def configured_variants(plan: Plan) -> list[str]:
    """Every ``<group>/<variant>`` the active groups list."""
    return list(dict.fromkeys(key.qualified for key in plan.home))


def configured_seeds(plan: Plan, qualified: str) -> list[int]:
    """The seeds the config trains ``<group>/<variant>`` with (none for an unknown one)."""
    group, _, variant = qualified.partition("/")
    g = plan.groups.get(group)
    return list(g.seeds) if g is not None and group in plan.configs and variant in g.variants else []


def group_sizes(plan: Plan, groups: list[str]) -> list[str]:
    """The sizes the named active groups train, in order of first appearance."""
    return list(dict.fromkeys(s for g in groups if g in plan.configs for s in plan.groups[g].sizes))


def values_by_seed(long: pl.DataFrame, variant: str, size: str, benchmark: str, metric: str) -> dict[int, float | None]:
    """{seed: value} of one (variant, size, benchmark, metric); a null value stays None."""
    part = long.filter((pl.col("variant") == variant) & (pl.col("size") == size)
                       & (pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
    return dict(zip(part["seed"].to_list(), part["value"].to_list()))
