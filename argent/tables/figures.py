"""Figures beside the tables: training curves of seed 0 of every run, and the per-run analysis PNGs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from argent.io import atomic_output, atomic_write_bytes
from argent.runs import read_metrics


def training_curves(runs_dir: Path, out: Path, keys: tuple[str, ...] = ("loss", "loss/contrastive", "curv")) -> None:
    import matplotlib  # lazy: heavy, and only this figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, dict[str, list]] = defaultdict(dict)
    for metrics in sorted(runs_dir.glob("*/*/seed0/metrics.jsonl")):  # <group>/<variant>-<size>/seed0
        rows = read_metrics(metrics)
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if pts:
                series[key][f"{metrics.parents[2].name}/{metrics.parents[1].name}"] = pts
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
    for png in sorted(eval_dir.glob("*/*/seed*/*.png")):  # <group>/<variant>-<size>/seed<k>/<name>.png
        name = f"{png.parents[2].name}-{png.parents[1].name}-{png.parent.name}-{png.name}"
        atomic_write_bytes(figures / name, png.read_bytes())
