"""The pretrained-models table: checkpoints argent did not train, on the main table's columns.

``results/eval/pretrained/<family>-<size>/seed0/<benchmark>.json`` (``argent evaluate --pretrained``,
docs/pretrained.md) -> ``pretrained.{md,csv}``: one row per pretrained model, the columns of
``tables.main.columns`` (label, benchmark, metric, scale). One evaluation per model (its published
weights), so a cell is a single value, never an interval; these rows take part in no claim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argent.io import flatten
from argent.runs import PRETRAINED_GROUP
from argent.tables.paper import PARTIAL_MARK
from argent.tables.readers import read_evaluation
from argent.tablespec.section import Column

TABLE = "pretrained"  # tables/pretrained.{md,csv}
NOTE = "released checkpoints, not trained here"


def pretrained_table(eval_dir: Path, columns: list[Column]) -> tuple[str, list[dict[str, Any]]] | None:
    """(markdown, records) for every pretrained model evaluated under ``eval_dir``; None when there is none."""
    models: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted((eval_dir / PRETRAINED_GROUP).glob("*/seed0/*.json")):
        models.setdefault(path.parent.parent.name, {})[path.stem] = read_evaluation(path)  # checked
    if not models:
        return None
    records, lines = [], []
    for name, results in models.items():
        source = next(iter(results.values())).get("pretrained") or {}
        row: dict[str, Any] = {"model": name, "layout": source.get("layout"), "arch": source.get("arch"),
                               "sha256": (source.get("sha256") or "")[:12]}
        cells = []
        for col in columns:
            result = results.get(col.benchmark)
            metrics = flatten(result.get("metrics", {}), sep="/") if result else {}
            value = metrics.get(col.metric)
            scaled = None if value is None else float(value) * float(col.scale)
            partial = bool(result) and result.get("partial") is True  # skipped items: marked, as in the main table
            row[col.label] = scaled
            row[f"{col.label} partial"] = partial
            mark = f" {PARTIAL_MARK}" if partial and scaled is not None else ""
            cells.append("not evaluated" if result is None else "n/a" if scaled is None else f"{scaled:.1f}{mark}")
        records.append(row)
        lines.append(f"| {name} | {row['layout']}:{row['arch']} | " + " | ".join(cells) + " |")
    header = ["# Pretrained models (" + NOTE + ")", "",
              "One evaluation of the released weights per model (no seeds, no interval); argent's protocol and "
              "data, the model's own preprocessing and tokenizer (docs/pretrained.md). Not part of any claim. "
              f"{PARTIAL_MARK} = an evaluation marked partial (items skipped; its JSON says why).", "",
              "| model | layout | " + " | ".join(c.label for c in columns) + " |",
              "|---|---|" + "---|" * len(columns)]
    return "\n".join(header + lines) + "\n", records
