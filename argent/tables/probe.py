"""The TaxGen probe table (results/probe/<group>/<variant>-<size>/seed<k>.json -> probe.{md,csv}).

Each result is read through ``argent.tables.run_readers.read_probe``: a file of the wrong shape stops the
tables naming it; a value outside its range is marked ``INVALID`` in its cell and named in the footnote,
never printed as a number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argent.runs import split_run
from argent.tables.run_readers import INVALID, ProbeValue, read_probe

PROBE_CONDITIONS = ("leaf_only/none", "leaf_only/across", "leaf_only/within")


def _cell(value: ProbeValue, digits: int = 3) -> str:
    if value.problem:
        return INVALID
    return "n/a" if value.value is None else f"{value.value:.{digits}f}"


def probe_table(probe_dir: Path, conditions: tuple[str, ...] = PROBE_CONDITIONS) -> tuple[str, list]:
    """TaxGen at 100 % hypernym ablation: unseen-hypernym macro-F1 (category mean, test split) per
    run, mean ± 95 % CI over probe seeds, beside the always-"No" majority baseline."""
    records: list[dict[str, Any]] = []
    lines_of: list[tuple[dict[str, Any], dict[str, ProbeValue]]] = []
    for path in sorted(probe_dir.glob("*/*/seed*.json")):
        variant, size = split_run(path.parent.name)
        variant = f"{path.parent.parent.name}/{variant}"
        for cond in read_probe(path):  # the shape checked; values outside their range marked
            if cond["name"] not in conditions:
                continue
            cells = {k: cond[k] for k in ("macro_f1", "ci95", "n", "always_no", "coherence")}
            problems = "; ".join(v.problem for v in cells.values() if v.problem)
            record = {"variant": variant, "size": size, "run_seed": int(path.stem.removeprefix("seed")),
                      "condition": cond["name"], "macro_f1": cells["macro_f1"].value, "ci95": cells["ci95"].value,
                      "n_probe_seeds": int(cells["n"].value or 0), "always_no": cells["always_no"].value,
                      "coherence": cells["coherence"].value, "invalid": problems}
            records.append(record)
            lines_of.append((record, cells))
    lines = ["# Taxonomic-generalisation probe (TaxGen protocol, 100 % hypernym ablation)", "",
             "Unseen-hypernym macro-F1 (mean over hypernym categories, test split), mean ± 95 % CI over probe "
             "seeds; majority baseline = always \"No\".", "",
             "| run | condition | macro-F1 | always-No | visual coherence |", "|---|---|---|---|---|"]
    for r, cells in lines_of:
        f1 = _cell(cells["macro_f1"])
        if f1 not in ("n/a", INVALID):
            ci = "" if cells["ci95"].value is None else f" ± {_cell(cells['ci95'])}"
            f1 = f"{f1}{ci} (n={_cell(cells['n'], 0)})"
        lines.append(f"| {r['variant']}-{r['size']}/seed{r['run_seed']} | {r['condition']} | {f1} | "
                     f"{_cell(cells['always_no'])} | {_cell(cells['coherence'])} |")
    invalid = [r["invalid"] for r in records if r["invalid"]]
    if invalid:
        lines += ["", f"{INVALID}: a value outside its range in the probe's result, not printed (re-run the probe "
                      f"job that wrote it): " + "; ".join(invalid)]
    return "\n".join(lines) + "\n", records
