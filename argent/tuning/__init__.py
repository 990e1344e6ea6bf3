"""The tuning stage: an Optuna study over a variant's fields, scored on validation data only.

Modules, in the order a worker uses them (docs/tuning.md tells the whole story):
``config`` (the ``tune:`` section), ``space`` (what is searched), ``storage`` (where the study
lives), ``budget`` (the exact trial budget across workers), ``study`` (the worker loop),
``objective`` (train + validation score), ``tracking`` (MLflow mirror), ``export`` (best.yaml,
trials.csv, figures), ``run`` / ``cli`` (``argent tune``).
"""

import importlib
from typing import Any

# name -> module: imported on first use (PEP 562), so that reading the tune: section's types
# (argent.tuning.config, the workflow's parse) does not import optuna and torch. ``run`` is the
# submodule argent.tuning.run (its function: ``from argent.tuning.run import run``).
_LAZY = {
    "ObjectiveTerm": "argent.tuning.config",
    "ParamSpace": "argent.tuning.space",
    "StudySpec": "argent.tuning.storage",
    "TrainingObjective": "argent.tuning.objective",
    "TrialContext": "argent.tuning.study",
    "TuneConfig": "argent.tuning.config",
    "TuneError": "argent.tuning.storage",
    "TuneRequest": "argent.tuning.run",
    "ValidationScorer": "argent.tuning.objective",
    "budget_used": "argent.tuning.budget",
    "export_study": "argent.tuning.export",
    "finished_in_budget": "argent.tuning.budget",
    "load_tune": "argent.tuning.config",
    "main": "argent.tuning.cli",
    "parse_tune": "argent.tuning.config",
    "run_study": "argent.tuning.study",
    "sample_params": "argent.tuning.space",
    "study_spec": "argent.tuning.storage",
    "validation_benchmarks": "argent.tuning.objective",
    "variant_overrides": "argent.tuning.space",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'argent.tuning' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "ObjectiveTerm",
    "ParamSpace",
    "StudySpec",
    "TrainingObjective",
    "TrialContext",
    "TuneConfig",
    "TuneError",
    "TuneRequest",
    "ValidationScorer",
    "budget_used",
    "export_study",
    "finished_in_budget",
    "load_tune",
    "main",
    "parse_tune",
    "run_study",
    "sample_params",
    "study_spec",
    "validation_benchmarks",
    "variant_overrides",
]
