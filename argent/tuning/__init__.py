"""The tuning stage: an Optuna study over a variant's fields, scored on validation data only.

Modules, in the order a worker uses them (docs/tuning.md tells the whole story):
``config`` (the ``tune:`` section), ``space`` (what is searched), ``storage`` (where the study
lives), ``budget`` (the exact trial budget across workers), ``study`` (the worker loop),
``objective`` (train + validation score), ``tracking`` (MLflow mirror), ``export`` (best.yaml,
trials.csv, figures), ``run`` / ``cli`` (``argent tune``).
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

# Imported on first use (argent.lazy), so that reading the tune: section's types (argent.tuning.config, the
# workflow's parse) does not import optuna and torch. ``run`` is the submodule argent.tuning.run (its function:
# ``from argent.tuning.run import run``).
if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.tuning.budget import budget_used, finished_in_budget
    from argent.tuning.cli import main
    from argent.tuning.config import ObjectiveTerm, TuneConfig, load_tune, parse_tune
    from argent.tuning.export import export_study
    from argent.tuning.objective import TrainingObjective, ValidationScorer
    from argent.tuning.run import TuneRequest
    from argent.tuning.space import ParamSpace, sample_params, variant_overrides
    from argent.tuning.storage import StudySpec, TuneError, study_spec
    from argent.tuning.study import TrialContext, run_study
    from argent.tuning.validation import validation_benchmarks

__all__ = [
    "ObjectiveTerm", "ParamSpace", "StudySpec", "TrainingObjective", "TrialContext", "TuneConfig", "TuneError",
    "TuneRequest", "ValidationScorer", "budget_used", "export_study", "finished_in_budget", "load_tune", "main",
    "parse_tune", "run_study", "sample_params", "study_spec", "validation_benchmarks", "variant_overrides",
]
__getattr__, __dir__ = lazy_exports(__name__)
