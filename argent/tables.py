"""`argent tables`: the paper's tables and figures from evaluation JSON and run folders.

Layout comes from the workflow config's ``tables`` section:

    tables:
      main:                       # ARGENT Table 2 layout: rows = families × sizes
        variants: [clip, meru, hycoclip, argent]
        columns: [{label: Cls, benchmark: hs_zeroshot, metric: top1}, ...]
      ablations:                  # Table 3 layout: groups of rows
        columns: [...]
        groups: [{name: "(a) loss", rows: [{label: "MERU Ent", variant: meru}, ...]}, ...]

Each cell is mean ± std over seeds with n; a metric that a benchmark reports as null (e.g. PEP for
CLIP) shows "n/a". Published numbers are printed beside ours, in their own labelled tables, never
mixed into our cells: they come from other data and budgets.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from argent.engine.tracking import log_tables_run
from argent.io import atomic_output, atomic_write_bytes, atomic_write_text, flatten

PUBLISHED = Path(__file__).parent / "resources" / "published.yaml"
RUN_DIR_PARTS = 3  # <variant>-<size>/seed<k>/<benchmark>.json


def split_run(name: str) -> tuple[str, str]:
    """``<variant>-<size>`` -> (variant, size); sizes contain no '-'."""
    variant, _, size = name.rpartition("-")
    return variant, size


def collect(eval_dir: Path) -> pl.DataFrame:
    """One row per (variant, size, seed, benchmark, metric) with a numeric or null value."""
    rows = []
    for path in sorted(eval_dir.glob("*/seed*/*.json")):
        variant, size = split_run(path.parents[1].name)
        seed = int(path.parent.name.removeprefix("seed"))
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON ({err}); delete it and re-run its evaluate job") from None
        for metric, value in flatten(data.get("metrics", {}), sep="/").items():
            if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                rows.append({"variant": variant, "size": size, "seed": seed, "benchmark": path.stem,
                             "metric": metric, "value": None if value is None else float(value)})
    schema = {"variant": pl.Utf8, "size": pl.Utf8, "seed": pl.Int64, "benchmark": pl.Utf8, "metric": pl.Utf8,
              "value": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def aggregate(long: pl.DataFrame) -> pl.DataFrame:
    """Mean, sample std and n over seeds; null values (n/a metrics) stay null."""
    return long.group_by(["variant", "size", "benchmark", "metric"]).agg(
        pl.col("value").mean().alias("mean"),
        pl.col("value").std().alias("std"),
        pl.col("value").count().alias("n"),
        pl.len().alias("n_files"),
    )


def fmt_cell(mean: float | None, std: float | None, n: int, scale: float = 1.0) -> str:
    if n == 0 or mean is None:
        return "n/a"
    text = f"{mean * scale:.2f}"
    if n > 1 and std is not None and not math.isnan(std):
        text += f" ± {std * scale:.2f}"
    return f"{text} (n={n})"


def build_table(agg: pl.DataFrame, rows: list[dict[str, str]], columns: list[dict[str, Any]], sizes: list[str]) -> pl.DataFrame:
    """rows: [{label, variant}], columns: [{label, benchmark, metric, scale?}] -> one line per row × size."""
    index = {(r["variant"], r["size"], r["benchmark"], r["metric"]): r for r in agg.iter_rows(named=True)}
    out = []
    for size in sizes:
        for row in rows:
            line: dict[str, Any] = {"row": row["label"], "variant": row["variant"], "size": size}
            for col in columns:
                hit = index.get((row["variant"], size, col["benchmark"], col["metric"]))
                if hit is None:
                    line[col["label"]] = "missing"
                    continue
                line[col["label"]] = fmt_cell(hit["mean"], hit["std"], hit["n"], col.get("scale", 1.0))
            out.append(line)
    return pl.DataFrame(out)


def long_form(agg: pl.DataFrame, rows: list[dict[str, str]], columns: list[dict[str, Any]], sizes: list[str],
              group: str = "") -> list[dict[str, Any]]:
    """CSV records: one per cell, with mean/std/n as numbers."""
    index = {(r["variant"], r["size"], r["benchmark"], r["metric"]): r for r in agg.iter_rows(named=True)}
    out = []
    for size in sizes:
        for row in rows:
            for col in columns:
                hit = index.get((row["variant"], size, col["benchmark"], col["metric"]))
                scale = col.get("scale", 1.0)
                mean = hit["mean"] * scale if hit and hit["mean"] is not None else None
                std = hit["std"] * scale if hit and hit["std"] is not None else None
                out.append({"group": group, "row": row["label"], "variant": row["variant"], "size": size,
                            "column": col["label"], "benchmark": col["benchmark"], "metric": col["metric"],
                            "mean": mean, "std": std, "n": hit["n"] if hit else 0, "source": "argent"})
    return out


def markdown(df: pl.DataFrame) -> str:
    cols = [c for c in df.columns if c != "variant"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in df.iter_rows(named=True):
        lines.append("| " + " | ".join("" if rec[c] is None else str(rec[c]) for c in cols) + " |")
    return "\n".join(lines)


def published_markdown(key: str) -> str:
    pub = yaml.safe_load(PUBLISHED.read_text())[key]
    cols = pub["columns"]
    lines = [f"**Published, for orientation only** — {pub['source']} (different data and budget; not comparable "
             "digit for digit).", "", "| model | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for name, values in pub["rows"].items():
        lines.append(f"| {name} | " + " | ".join("–" if v is None else f"{v}" for v in values) + " |")
    return "\n".join(lines)


def write_csv(records: list[dict[str, Any]], path: Path) -> None:
    with atomic_output(path) as tmp:
        pl.DataFrame(records, infer_schema_length=None).write_csv(tmp)


def main_table(agg: pl.DataFrame, spec: dict[str, Any], sizes: list[str], present: set[str]) -> tuple[str, list]:
    rows = [{"label": v, "variant": v} for v in spec["variants"] if v in present]
    table = build_table(agg, rows, spec["columns"], sizes)
    md = ["# Main results (ARGENT Table 2 layout)", "",
          "Cells: mean ± std over seeds (n = number of seeds); n/a = not defined for that model.", "",
          markdown(table), "", published_markdown("table2"), ""]
    return "\n".join(md), long_form(agg, rows, spec["columns"], sizes)


def ablation_table(agg: pl.DataFrame, spec: dict[str, Any], sizes: list[str], present: set[str]) -> tuple[str, list]:
    md = ["# Ablations (ARGENT Table 3 layout)", "",
          "Cells: mean ± std over seeds (n = number of seeds).", ""]
    records: list[dict[str, Any]] = []
    for group in spec["groups"]:
        rows = [r for r in group["rows"] if r["variant"] in present]
        if not rows:
            continue
        md += [f"## {group['name']}", "", markdown(build_table(agg, rows, spec["columns"], sizes)), ""]
        records += long_form(agg, rows, spec["columns"], sizes, group["name"])
    md += [published_markdown("table3"), ""]
    return "\n".join(md), records


# ---- probe ---------------------------------------------------------------------------------------

PROBE_CONDITIONS = ("leaf_only/none", "leaf_only/across", "leaf_only/within")


def probe_table(probe_dir: Path, conditions: tuple[str, ...] = PROBE_CONDITIONS) -> tuple[str, list]:
    """TaxGen at 100 % hypernym ablation: unseen-hypernym macro-F1 (category mean, test split) per
    run, mean ± 95 % CI over probe seeds, beside the always-"No" majority baseline."""
    records: list[dict[str, Any]] = []
    for path in sorted(probe_dir.glob("*/seed*.json")):
        data = json.loads(path.read_text())
        variant, size = split_run(path.parent.name)
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


# ---- figures ---------------------------------------------------------------------------------


def training_curves(runs_dir: Path, out: Path, keys: tuple[str, ...] = ("loss", "loss/contrastive", "curv")) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, dict[str, list]] = defaultdict(dict)
    for metrics in sorted(runs_dir.glob("*/seed0/metrics.jsonl")):
        rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if pts:
                series[key][metrics.parents[1].name] = pts
    if not series:
        return
    fig, axes = plt.subplots(1, len(series), figsize=(5 * len(series), 3.5), squeeze=False)
    for ax, (key, runs) in zip(axes[0], series.items()):
        for name, pts in runs.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, lw=1)
        ax.set_title(key)
        ax.set_xlabel("step")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    with atomic_output(out) as tmp:
        fig.savefig(tmp, dpi=90)
    plt.close(fig)


def copy_run_figures(eval_dir: Path, figures: Path) -> None:
    """Figures the analysis benchmark wrote beside its JSON, renamed per run."""
    for png in sorted(eval_dir.glob("*/seed*/*.png")):
        atomic_write_bytes(figures / f"{png.parents[1].name}-{png.parent.name}-{png.name}", png.read_bytes())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argent tables", description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="workflow config (tables, runs sections)")
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--out", type=Path, default=None, help="tables folder (default <results>/tables)")
    p.add_argument("--figures", type=Path, default=None, help="per-run figures folder (default <results>/figures/runs)")
    p.add_argument("--curves", type=Path, default=None, help="training-curves PNG (default <results>/figures/training_curves.png)")
    args = p.parse_args(argv)
    cfg = yaml.safe_load(args.config.read_text())
    out = args.out or args.results / "tables"
    figures = args.figures or args.results / "figures" / "runs"
    curves = args.curves or args.results / "figures" / "training_curves.png"
    out.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)

    long = collect(args.results / "eval")
    if long.is_empty():
        raise SystemExit(f"argent tables: no evaluation JSON under {args.results / 'eval'}; run the evaluate jobs first")
    agg = aggregate(long)
    present = set(long["variant"].unique().to_list())
    sizes = [s for s in cfg["runs"]["sizes"] if s in set(long["size"].to_list())]
    spec = cfg["tables"]
    md, records = main_table(agg, spec["main"], sizes, present)
    atomic_write_text(out / "main.md", md)
    write_csv(records, out / "main.csv")
    md, records = ablation_table(agg, spec["ablations"], sizes, present)
    atomic_write_text(out / "ablations.md", md)
    write_csv(records, out / "ablations.csv")
    if any((args.results / "probe").glob("*/seed*.json")):
        md, records = probe_table(args.results / "probe")
        atomic_write_text(out / "probe.md", md)
        write_csv(records, out / "probe.csv")
    training_curves(args.results / "runs", curves)
    copy_run_figures(args.results / "eval", figures)
    log_tables_run(out, figures, cfg, args.results, sorted(curves.parent.glob("*.png")))  # best effort
    print((out / "main.md").read_text())
    return 0
