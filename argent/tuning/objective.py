"""The objective: train the base variant with a trial's fields, score it on validation data only.

The score is ``Σ weight × metric`` over ``tune.objective`` terms, each a metric of a benchmark
entry marked ``split: val`` (by default validation zero-shot top-1 and validation PEP AUC, the
two claims the study serves). A term on a benchmark that is not marked as validation, or on one
that reads the same files as a test benchmark, is refused: tuning on the test split would leak
it into the numbers the tables report (docs/tuning.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from argent.config import ConfigError, TrackingConfig, deep_merge, experiment_from_dict, parse_override
from argent.engine.trainer import train
from argent.evaluation.benchmarks import (
    entry_hash,
)
from argent.evaluation.runner import evaluate
from argent.models.trained import load_model
from argent.tuning.config import ObjectiveTerm, TuneConfig
from argent.tuning.space import variant_overrides
from argent.tuning.storage import TuneError
from argent.tuning.study import TrialContext

__all__ = [
    "ValidationScorer",
    "TrainingObjective",
    "workflow_fingerprint",
    "check_space_values",
]

def _metric(result: dict[str, Any], key: str, benchmark: str) -> float:
    node: Any = result["metrics"]
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise TuneError(f"benchmark {benchmark!r} has no metric {key!r}; its metrics: {sorted(result['metrics'])}")
        node = node[part]
    if node is None or isinstance(node, bool) or not isinstance(node, (int, float)):
        return float("nan")  # n/a (e.g. PEP of a Euclidean model): the trial fails, the study goes on
    return float(node)


class ValidationScorer:
    """model -> (objective value, {benchmark/metric: score}): ``Σ weight × metric`` over the terms."""

    def __init__(self, terms: list[ObjectiveTerm], entries: dict[str, Any],
                 run_benchmark: Callable[[Any, str, Any], dict[str, Any]] = evaluate) -> None:
        self.terms = terms
        self.entries = entries
        self.run_benchmark = run_benchmark  # argent.evaluation.runner.evaluate; tests pass a stand-in

    def __call__(self, model: Any) -> tuple[float, dict[str, float]]:
        results = {name: self.run_benchmark(model, name, entry) for name, entry in self.entries.items()}
        scores = {f"{t.benchmark}/{t.metric}": _metric(results[t.benchmark], t.metric, t.benchmark) for t in self.terms}
        value = sum(t.weight * scores[f"{t.benchmark}/{t.metric}"] for t in self.terms)
        return value, scores


class TrainingObjective:
    """Train the base variant with the trial's fields, score it on the validation benchmarks."""

    def __init__(self, tune: TuneConfig, workflow: dict[str, Any], base_dir: Path, scorer: ValidationScorer,
                 tracking: TrackingConfig, experiment: str) -> None:
        self.tune = tune
        self.workflow = workflow
        self.base_dir = base_dir
        self.scorer = scorer
        self.tracking = tracking
        self.experiment = experiment

    def experiment_config(self, params: dict[str, Any]) -> Any:
        """The trial's resolved ``ExperimentConfig`` (train_overrides, report_every, tracking applied)."""
        cfg = self.workflow
        for text in self.tune.train_overrides:
            cfg = deep_merge(cfg, parse_override(text))
        if self.tune.report_every:
            cfg = deep_merge(cfg, {"train": {"checkpoint_every": self.tune.report_every}})
        exp = experiment_from_dict(cfg, self.tune.base_variant, self.tune.size, self.tune.seed,
                                   base_dir=self.base_dir, variant_overrides=variant_overrides(params))
        # The trial's training logs into the trial's nested MLflow run (same run-folder tag).
        exp.tracking = dataclasses.replace(self.tracking, experiment=self.experiment)
        return exp

    def __call__(self, ctx: TrialContext) -> float:
        exp = self.experiment_config(ctx.params)

        def on_checkpoint(step: int, model: Any) -> None:
            value, scores = self.scorer(model)
            ctx.report(value, step, scores)

        # A stop signal (SIGTERM, SIGUSR1, Ctrl-C) ends the training at a step with a checkpoint; the study
        # re-queues the trial for the next worker (argent/tuning/study.py: TrialStopped).
        train(exp, ctx.run_dir, resume="no", on_checkpoint=on_checkpoint)
        model, _ = load_model(ctx.run_dir, device=exp.train.device)
        value, scores = self.scorer(model)
        ctx.trial.set_user_attr("scores", scores)
        ctx.report(value, exp.train.steps, scores, prune=False)  # the finished run is not pruned
        return value


def workflow_fingerprint(tune: TuneConfig, entries: dict[str, Any], objective: TrainingObjective) -> dict[str, Any]:
    """Tune fields + the base run's result hash + the validation entries' hashes."""
    base = objective.experiment_config({})
    return {**tune.fingerprint(), "run_hash": base.result_hash(),
            "benchmarks": {name: entry_hash(entry) for name, entry in sorted(entries.items())}}


def check_space_values(tune: TuneConfig, objective: TrainingObjective) -> None:
    """Every bound and choice must make a valid variant (e.g. huber_beta > 0) before trials start."""
    for name, spec in tune.space.items():
        values = spec.choices if spec.type == "categorical" else [spec.low, spec.high]
        for value in values:
            if spec.type == "int":
                value = int(value)
            try:
                objective.experiment_config({name: value})
            except ConfigError as err:
                raise ConfigError(f"tune.space.{name}: value {value!r} makes an invalid variant: {err}") from None
