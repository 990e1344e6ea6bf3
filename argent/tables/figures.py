"""Figures beside the tables: training curves of seed 0 of every run, and the per-run analysis PNGs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from argent.colours import family_of, line_styles
from argent.io import atomic_output, atomic_write_bytes
from argent.runs import RunFolder, read_metrics


def _curves(runs_dir: Path, keys: tuple[str, ...]) -> tuple[dict[str, dict[str, list]], dict[str, str]]:
    """({metric key: {label: [(step, value)]}}, {label: family}) of seed 0 of every run."""
    series: dict[str, dict[str, list]] = defaultdict(dict)
    families: dict[str, str] = {}
    for metrics in sorted(runs_dir.glob("*/*/seed0/metrics.jsonl")):  # <group>/<variant>-<size>/seed0
        label = f"{metrics.parents[2].name}/{metrics.parents[1].name}"
        rows = read_metrics(metrics)
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if pts:
                series[key][label] = pts
        variant = metrics.parents[1].name.rpartition("-")[0] or metrics.parents[1].name
        families[label] = family_of(RunFolder(metrics.parent).stored_config(), variant)
    return series, families


def training_curves(runs_dir: Path, out: Path, keys: tuple[str, ...] = ("loss", "loss/contrastive", "curv")) -> None:
    """One panel per metric key, one line per run; a run has its family's colour in every panel
    (argent/colours.py), also where another family has no curve (CLIP: no curvature)."""
    series, families = _curves(runs_dir, keys)
    if not series:
        return
    import matplotlib  # lazy: heavy, and only this figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = line_styles({label: f for label, f in families.items() if any(label in r for r in series.values())})
    fig, axes = plt.subplots(1, len(series), figsize=(5 * len(series), 3.5), squeeze=False)
    for ax, (key, runs) in zip(axes[0], series.items()):
        for name, pts in runs.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, lw=1, **styles[name])
        ax.set_title(key)
        ax.set_xlabel("step")
    _legend(axes[0][0], styles)
    fig.tight_layout()
    with atomic_output(out) as tmp:
        fig.savefig(tmp, dpi=90)
    plt.close(fig)


def _legend(ax: Any, styles: dict[str, dict[str, str]]) -> None:
    """Every run once, drawn as its lines are: a run missing from this panel is still named."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], lw=1, label=label, **style) for label, style in styles.items()]
    ax.legend(handles=handles, fontsize=6)


def copy_run_figures(eval_dir: Path, figures: Path) -> int:
    """Figures the analysis benchmark wrote beside its JSON, renamed per run; returns how many (none:
    ``figures`` is not made, so that no empty folder stands for figures)."""
    pngs = sorted(eval_dir.glob("*/*/seed*/*.png"))  # <group>/<variant>-<size>/seed<k>/<name>.png
    for png in pngs:
        name = f"{png.parents[2].name}-{png.parents[1].name}-{png.parent.name}-{png.name}"
        atomic_write_bytes(figures / name, png.read_bytes())
    return len(pngs)
