"""The exposure figure: probe macro-F1 against the share of hypernym questions withheld, one line
per model family, one panel per ablation kind."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from argent.colours import line_styles
from argent.io import atomic_output
from argent.probe.config import ABLATIONS
from argent.probe.metrics import mean_ci
from argent.probe.protocol import PROTOCOL


def _family_label(result: Mapping[str, Any], sizes: set[str]) -> str:
    model = result.get("model", {})
    family = model.get("family") or model.get("geometry", "model")
    return f"{family}-{model['size']}" if len(sizes) > 1 and model.get("size") else family


def _colour_families(results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """{line label: the catalogue family whose colour it takes (argent/colours.py)}; a result of an
    older probe, without ``catalogue_family``, takes its variant's."""
    sizes = {r.get("model", {}).get("size") for r in results} - {None}
    out = {}
    for result in results:
        model = result.get("model", {})
        out[_family_label(result, sizes)] = model.get("catalogue_family") or model.get("family") or "model"
    return out


def exposure_points(
    results: Sequence[Mapping[str, Any]], split: str = "unseen", metric: str = "category_mean_macro_f1"
) -> dict[str, dict[str, dict[float, dict[str, Any]]]]:
    """{family: {ablation kind: {level: mean_ci over every seed of every result of that family}}} (no shuffles).

    ``full`` (0 %) and ``leaf_only`` (100 %) belong to both kinds' curves.
    """
    sizes = {r.get("model", {}).get("size") for r in results} - {None}
    pooled: dict[str, dict[str, dict[float, list[float]]]] = {}
    for result in results:
        family = _family_label(result, sizes)
        for cond in result["conditions"]:
            if cond["shuffle"] != "none":
                continue
            entry = cond["summary"]["test"].get(split)
            if not entry or metric not in entry:
                continue
            kinds = ABLATIONS if cond["ablation"] in ("full", "leaf_only") else (cond["ablation"],)
            for kind in kinds:
                bucket = pooled.setdefault(family, {}).setdefault(kind, {}).setdefault(float(cond["level"]), [])
                bucket.extend(entry[metric]["values"])
    return {
        fam: {kind: {lvl: mean_ci(v) for lvl, v in sorted(levels.items())} for kind, levels in kinds.items()}
        for fam, kinds in pooled.items()
    }


def plot_exposure(
    jsons: Sequence[str | Path | Mapping[str, Any]],
    out_png: str | Path,
    split: str = "unseen",
    metric: str = "category_mean_macro_f1",
) -> Path:
    """Macro-F1 (mean ± 95 % CI) against the ablation level, one line per model family, one panel per
    ablation kind; the always-No baseline dashed. Written atomically."""
    import matplotlib  # lazy: only the figure needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [j if isinstance(j, Mapping) else json.loads(Path(j).read_text()) for j in jsons]
    for j, r in zip(jsons, results):
        if r.get("protocol") != PROTOCOL:
            where = "result" if isinstance(j, Mapping) else str(j)
            raise ValueError(f"{where}: not a probe result (protocol {r.get('protocol')!r}, expected {PROTOCOL!r})")
    points = exposure_points(results, split, metric)
    baseline_metric = "category_mean_always_no" if metric.startswith("category_mean") else "always_no"
    baseline = exposure_points(results, split, baseline_metric)
    styles = line_styles({label: family for label, family in _colour_families(results).items() if label in points})
    fig, axes = plt.subplots(1, len(ABLATIONS), figsize=(5.5 * len(ABLATIONS), 4), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], ABLATIONS):
        for rank, (family, kinds) in enumerate(sorted(points.items())):
            curve = kinds.get(kind, {})
            xs = [x for x, v in curve.items() if v["mean"] is not None]
            if not xs:
                continue
            ys = [curve[x]["mean"] for x in xs]
            err = [curve[x]["ci95"] or 0.0 for x in xs]
            shift = 0.8 * (rank - (len(points) - 1) / 2)  # side by side, so the error bars stay readable
            ax.errorbar([x + shift for x in xs], ys, yerr=err, marker="o", capsize=3, label=family, **styles[family])
        base = {}
        for kinds in baseline.values():
            for x, v in kinds.get(kind, {}).items():
                base.setdefault(x, []).extend(v["values"])
        if base:
            xs = sorted(base)
            ax.plot(xs, [float(np.mean(base[x])) for x in xs], "k--", lw=1, label="always No")
        ax.set_title(f"{kind} ablation")
        ax.set_xlabel("hypernym exposure withheld (%)  [0 = full, 100 = leaf-only]")
        ax.set_xlim(-5, 105)
        ax.set_ylim(0.0, 1.02)  # F1 is in [0, 1]; a few-seed t interval can reach past it
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{metric.replace('_', ' ')} ({split}, test)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_png)
    try:
        with atomic_output(out) as tmp:
            fig.savefig(tmp, dpi=120)
    finally:
        plt.close(fig)
    return out

