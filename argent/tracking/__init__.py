"""MLflow mirror of a run. The run folder is the truth; tracking is best effort.

Every MLflow call goes through ``Tracker._safe``: the first failure is reported once, tracking is
switched off for the rest of the job, and training (or evaluation) goes on. What lands where:

- a training run: the resolved config as params, ``metrics.jsonl`` as metrics, tags that make the
  UI filterable (variant, size, seed, family, Table 3 group, git commit, config hash; see
  ``run_tags``); its MLflow run id is kept in the run folder (``mlflow_run.json``);
- its evaluations, on the same MLflow run (``log_evaluation``): ``eval/<benchmark>/<metric>``
  metrics, counts and the evaluation-entry hash as tags, the result JSON and its figures as
  artifacts under ``eval/<benchmark>/``; re-evaluating replaces the values, never duplicates;
- the tables and figures of a workflow invocation: one ``tables`` run (``log_tables_run``);
- a pretrained model's evaluations: one ``pretrained`` run (``log_pretrained``).

``argent track --run DIR`` re-sends a run folder (config, metrics, evaluation results) later; it is
idempotent. See docs/mlflow.md for how to compare runs in ``mlflow ui``.

Modules, in the order a call goes through them: ``mirror`` (what a run folder, its evaluations and
the tables send), ``tags`` (metric keys and the tags that identify runs and results), ``tracker``
(the MLflow client plumbing: ``Tracker``), ``cli`` (``argent track``). The names below are the
package's public API, imported on first use (``argent.lazy``).
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.tracking.mirror import (
        RUN_RECORD,
        log_evaluation,
        log_pretrained,
        log_results,
        log_tables_run,
        mirror_training,
        open_run,
        resend,
        workflow_hash,
    )
    from argent.tracking.tags import (
        EVAL_PREFIX,
        EXPERIMENT_KIND,
        catalogue_tags,
        git_commit,
        metric_key,
        result_tags,
        run_tags,
        variant_tags,
    )
    from argent.tracking.tracker import Tracker

__all__ = [
    "EVAL_PREFIX", "EXPERIMENT_KIND", "RUN_RECORD", "Tracker", "catalogue_tags", "git_commit", "log_evaluation",
    "log_pretrained", "log_results", "log_tables_run", "metric_key", "mirror_training", "open_run", "resend",
    "result_tags", "run_tags", "variant_tags", "workflow_hash",
]
__getattr__, __dir__ = lazy_exports(__name__)
