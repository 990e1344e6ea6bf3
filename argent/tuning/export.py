"""What a study leaves behind, written from the storage alone (any worker, any time), atomically:

- ``best.yaml``: ``variant:`` (the format ``argent train --variant-file`` reads) plus metadata;
- ``trials.csv``: one row per trial (state, value, parameters, retry links, failure reason);
- ``optimization_history.png``, ``param_importances.png`` (a note when not computable);
- ``summary.json``: counts, budget, best trial, notes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import polars as pl
import yaml
from optuna.trial import FrozenTrial, TrialState

from argent.io import atomic_output, atomic_write_text
from argent.runs import STUDY_BEST, STUDY_SUMMARY, STUDY_TRIALS
from argent.tuning.budget import finished_in_budget, retried_numbers
from argent.tuning.space import ParamSpace, variant_overrides
from argent.tuning.storage import StudySpec, load_existing_study, safe_url
from argent.tuning.tracking import StudyTracking

__all__ = ["export_study", "trials_frame"]

FILES = (STUDY_BEST, STUDY_TRIALS, "optimization_history.png", "param_importances.png")


def trials_frame(trials: list[FrozenTrial], space: dict[str, ParamSpace]) -> pl.DataFrame:
    """One row per trial, sorted by number; ``counts_in_budget`` is false for a retried stale FAIL."""
    retried = retried_numbers(trials)
    names = list(space) + sorted({k for t in trials for k in t.params} - set(space))
    rows = []
    for t in sorted(trials, key=lambda t: t.number):
        row = {
            "number": t.number,
            "state": t.state.name,
            "value": t.value,
            "n_intermediate": len(t.intermediate_values),
            "last_step": max(t.intermediate_values) if t.intermediate_values else None,
            "duration_s": t.duration.total_seconds() if t.duration is not None else None,
            "retry_of": t.system_attrs.get("failed_trial"),
            "counts_in_budget": not (t.state == TrialState.FAIL and t.number in retried),
            "failure": t.user_attrs.get("failure"),
        }
        row.update({f"param_{n}": t.params.get(n) for n in names})
        rows.append(row)
    schema = {"number": pl.Int64, "state": pl.Utf8, "value": pl.Float64, "n_intermediate": pl.Int64,
              "last_step": pl.Int64, "duration_s": pl.Float64, "retry_of": pl.Int64, "counts_in_budget": pl.Boolean,
              "failure": pl.Utf8}
    for n in names:
        spec = space.get(n)
        schema[f"param_{n}"] = (pl.Float64 if spec is None or spec.type == "float" else
                                pl.Int64 if spec.type == "int" else pl.Utf8)
        if schema[f"param_{n}"] is pl.Utf8:
            for row in rows:
                v = row[f"param_{n}"]
                row[f"param_{n}"] = None if v is None else (v if isinstance(v, str) else json.dumps(v))
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _save_figure(path: Path, draw: Callable[[], Any]) -> None:
    import matplotlib  # lazy: a heavy import only the export needs

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = draw()
    fig = ax.figure if hasattr(ax, "figure") else plt.gcf()
    fig.set_size_inches(7, 4.5)
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)


def _note_figure(text: str) -> Any:
    import matplotlib  # lazy: see _save_figure

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=11)
    return ax


def _best_doc(spec: StudySpec, study: optuna.Study, counted: int, counts: dict[str, int]) -> dict[str, Any]:
    bt = study.best_trial
    tune = spec.tune
    return {"variant": variant_overrides(bt.params),
            "study": tune.study, "base_variant": tune.base_variant, "size": tune.size,
            "trial": bt.number, "value": bt.value, "direction": tune.direction,
            "objective": [dataclasses.asdict(t) for t in tune.objective],
            "scores": bt.user_attrs.get("scores", {}),
            "trials": {"in_budget": counted, "budget": tune.n_trials, **{k.lower(): v for k, v in counts.items() if v}}}


def export_study(spec: StudySpec) -> dict[str, Any]:
    """Write best.yaml, trials.csv, the figures and summary.json from the storage alone."""
    import optuna.visualization.matplotlib as ovm  # lazy: pulls in matplotlib

    study = load_existing_study(spec)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    counted = finished_in_budget(trials)
    counts = {s.name: sum(t.state == s for t in trials) for s in TrialState}
    out = spec.out_dir
    notes: list[str] = []

    frame = trials_frame(trials, spec.tune.space)
    with atomic_output(out / STUDY_TRIALS) as tmp:
        frame.write_csv(tmp)

    best = None
    if complete:
        doc = _best_doc(spec, study, len(counted), counts)
        best = {"number": doc["trial"], "value": doc["value"], "params": study.best_trial.params}
        atomic_write_text(out / STUDY_BEST, yaml.safe_dump(doc, sort_keys=False))
    else:
        (out / STUDY_BEST).unlink(missing_ok=True)
        notes.append("no COMPLETE trial yet: best.yaml not written")

    _save_figure(out / "optimization_history.png",
                 lambda: ovm.plot_optimization_history(study) if complete else _note_figure("no complete trial yet"))
    if len(complete) >= 2:
        try:
            _save_figure(out / "param_importances.png", lambda: ovm.plot_param_importances(study))
        except (ValueError, RuntimeError) as err:  # e.g. every complete trial has the same parameters
            notes.append(f"parameter importance not computable: {err}")
            _save_figure(out / "param_importances.png", lambda: _note_figure(notes[-1]))
    else:
        notes.append(f"parameter importance needs >= 2 complete trials (have {len(complete)}); figure is a note")
        _save_figure(out / "param_importances.png", lambda: _note_figure(notes[-1]))

    done = len(counted) >= spec.tune.n_trials and not counts.get("RUNNING") and not counts.get("WAITING")
    summary = {"study": spec.tune.study, "storage": safe_url(spec.storage_url), "budget": spec.tune.n_trials,
               "in_budget": len(counted), "finished": done, "counts": {k: v for k, v in counts.items() if v},
               "best": best, "notes": notes, "files": list(FILES)}
    atomic_write_text(out / STUDY_SUMMARY, json.dumps(summary, indent=2, default=str) + "\n")
    StudyTracking(spec).close_study(summary, [out / name for name in (*FILES, STUDY_SUMMARY)], done)
    return summary
