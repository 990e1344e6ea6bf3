"""The tuning stage: an Optuna study over a variant's fields, scored on validation data only.

Modules, in the order a worker uses them (docs/tuning.md tells the whole story):
``config`` (the ``tune:`` section), ``space`` (what is searched), ``storage`` (where the study
lives), ``budget`` (the exact trial budget across workers), ``study`` (the worker loop),
``objective`` (train + validation score), ``tracking`` (MLflow mirror), ``export`` (best.yaml,
trials.csv, figures), ``run`` / ``cli`` (``argent tune``).
"""

from argent.lazy import lazy_exports

# name -> module: imported on first use (argent.lazy), so that reading the tune: section's types
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
    "validation_benchmarks": "argent.tuning.validation",
    "variant_overrides": "argent.tuning.space",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
