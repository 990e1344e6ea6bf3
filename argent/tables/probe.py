"""The TaxGen probe table (results/probe/<group>/<variant>-<size>/seed<k>.json -> probe.{md,csv})."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argent.io import read_json
from argent.runs import split_run

PROBE_CONDITIONS = ("leaf_only/none", "leaf_only/across", "leaf_only/within")


def probe_table(probe_dir: Path, conditions: tuple[str, ...] = PROBE_CONDITIONS) -> tuple[str, list]:
    """TaxGen at 100 % hypernym ablation: unseen-hypernym macro-F1 (category mean, test split) per
    run, mean ± 95 % CI over probe seeds, beside the always-"No" majority baseline."""
    records: list[dict[str, Any]] = []
    for path in sorted(probe_dir.glob("*/*/seed*.json")):
        data = read_json(path)
        variant, size = split_run(path.parent.name)
        variant = f"{path.parent.parent.name}/{variant}"
        for cond in data["conditions"]:
            if cond["name"] not in conditions:
                continue
            unseen = cond["summary"]["test"].get("unseen") or {}
            f1, base = unseen.get("category_mean_macro_f1"), unseen.get("category_mean_always_no")
            records.append({"variant": variant, "size": size, "run_seed": int(path.stem.removeprefix("seed")),
                            "condition": cond["name"], "macro_f1": f1["mean"] if f1 else None,
                            "ci95": f1["ci95"] if f1 else None, "n_probe_seeds": f1["n"] if f1 else 0,
                            "always_no": base["mean"] if base else None,
                            "coherence": (cond.get("coherence_mean") or {}).get("mean")})
    lines = ["# Taxonomic-generalisation probe (TaxGen protocol, 100 % hypernym ablation)", "",
             "Unseen-hypernym macro-F1 (mean over hypernym categories, test split), mean ± 95 % CI over probe "
             "seeds; majority baseline = always \"No\".", "",
             "| run | condition | macro-F1 | always-No | visual coherence |", "|---|---|---|---|---|"]
    for r in records:
        ci = f" ± {r['ci95']:.3f}" if r["ci95"] is not None else ""
        f1 = "n/a" if r["macro_f1"] is None else f"{r['macro_f1']:.3f}{ci} (n={r['n_probe_seeds']})"
        base = "n/a" if r["always_no"] is None else f"{r['always_no']:.3f}"
        coh = "n/a" if r["coherence"] is None else f"{r['coherence']:.3f}"
        lines.append(f"| {r['variant']}-{r['size']}/seed{r['run_seed']} | {r['condition']} | {f1} | {base} | {coh} |")
    return "\n".join(lines) + "\n", records
