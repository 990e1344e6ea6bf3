"""A finished run's summary (``summary.json``) and its loss curves (``curves.png``)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from argent.config import IDENTITY_VERSION, ExperimentConfig
from argent.io import atomic_output
from argent.runs import RunFolder, read_metrics

PERF_PREFIX = "perf/"  # wall-clock numbers: logged, but not part of the reproducible record


def run_summary(cfg: ExperimentConfig, files: RunFolder, step: int, skipped: int, config_hash: str) -> dict[str, Any]:
    rows = read_metrics(files.metrics)
    last = rows[-1] if rows else {}
    speeds = [r[PERF_PREFIX + "samples_per_s"] for r in rows if PERF_PREFIX + "samples_per_s" in r]
    return {
        "run": f"{cfg.variant_name}-{cfg.size}/seed{cfg.seed}", "steps": step, "skipped_steps": skipped,
        "config_hash": config_hash, "identity_version": IDENTITY_VERSION, "final": {k: v for k, v in last.items() if not k.startswith(PERF_PREFIX)},
        "mean_samples_per_s": sum(speeds) / len(speeds) if speeds else None,
    }


COUNT_KEYS = ("skipped_samples", "dropped_samples")  # the data counts of a run (argent.data.policy.skip_counts)


def add_counts(earlier: dict[str, Any], segment: dict[str, Any] | None) -> dict[str, Any]:
    """A run's data counts: the earlier segments' (kept in the checkpoint) plus this segment's
    (``skip_counts``; None for a batch source that does not count, or a segment that read nothing).
    ``{}`` when neither holds any (the summary then says nothing about counts, as before)."""
    if segment is None and not earlier:
        return {}
    total = {}
    for key in COUNT_KEYS:
        counts = Counter(earlier.get(key) or {})
        counts.update((segment or {}).get(key) or {})
        total[key] = dict(sorted(counts.items()))
    return total


def plot_curves(files: RunFolder) -> None:
    """Loss terms and scalars against step, one panel each."""
    import matplotlib  # heavy (about a second to import): only when a run finishes

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(files.metrics)
    if not rows:
        return
    keys = [k for k in rows[-1] if k.startswith("loss") or k in ("curv", "logit_scale", "alpha_img", "alpha_txt")]
    cols = 3
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 2.6 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in rows if key in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts])
        ax.set_title(key, fontsize=9)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    with atomic_output(files.curves) as tmp:
        fig.savefig(tmp, dpi=80)
    plt.close(fig)
