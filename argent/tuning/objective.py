"""The objective: train the base variant with a trial's fields, score it on validation data only.

The score is ``Σ weight × metric`` over ``tune.objective`` terms, each a metric of a benchmark
entry marked ``split: val`` (by default validation zero-shot top-1 and validation PEP AUC, the
two claims the study serves). A term on a benchmark that is not marked as validation, or on one
that reads the same files as a test benchmark, is refused: tuning on the test split would leak
it into the numbers the tables report (docs/tuning.md).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from argent.config import ConfigError, TrackingConfig, deep_merge, experiment_from_dict, parse_override
from argent.engine.trainer import train
from argent.evaluation.benchmarks import (
    CLEANED,
    ITEMS,
    PROTOCOLS,
    PepEntry,
    RetrievalEntry,
    ZeroShotEntry,
    entry_hash,
    entry_paths,
    parse_benchmark,
)
from argent.evaluation.hierarchy import HIERARCHY_METRICS
from argent.evaluation.runner import evaluate
from argent.runs import load_model
from argent.tuning.config import ObjectiveTerm, TuneConfig
from argent.tuning.space import variant_overrides
from argent.tuning.storage import TuneError
from argent.tuning.study import TrialContext

__all__ = [
    "validation_benchmarks",
    "ValidationScorer",
    "TrainingObjective",
    "workflow_fingerprint",
    "check_space_values",
]

def _data_files(raw: dict[str, Any]) -> set[str]:
    """The item files an entry reads (its protocol's ITEMS and CLEANED paths); a validation entry must
    not share one with a test entry (images may be shared between splits)."""
    return {str(Path(p)) for p in entry_paths(raw, (ITEMS, CLEANED)).values()}


def validation_benchmarks(tune: TuneConfig, workflow: dict[str, Any], base_dir: str | Path | None = None) -> dict[str, Any]:
    """The parsed benchmark entries the objective reads; each must be a validation split."""
    section = workflow.get("benchmarks") or {}
    entries = {}
    for i, term in enumerate(tune.objective):
        name, where = term.benchmark, f"tune.objective[{i}].benchmark"
        if name in entries:
            continue
        if name not in section:
            raise ConfigError(f"{where}: {name!r} is not under benchmarks:; known: {sorted(section)}")
        raw = dict(section[name] or {})
        if raw.get("split") != "val":
            raise ConfigError(
                f"{where}: benchmarks.{name} is not a validation benchmark (split: {raw.get('split')!r}); "
                f"tuning may only read validation data. Point a benchmark entry at a validation split and "
                f"mark it split: val (never the test split)."
            )
        protocol = PROTOCOLS.get(raw.get("protocol"))
        if protocol is not None and "split" not in {f.name for f in dataclasses.fields(protocol.entry)}:
            # ``split`` is only a label for this protocol (parse_benchmark drops it): its files must
            # be no test benchmark's
            for other, other_raw in section.items():
                shared = _data_files(raw) & _data_files(other_raw or {})
                if other != name and (other_raw or {}).get("split") != "val" and shared:
                    raise ConfigError(
                        f"{where}: benchmarks.{name} is marked split: val but reads {sorted(shared)[0]}, "
                        f"the data of the test benchmark benchmarks.{other}; give it a validation split's files."
                    )
        entries[name] = parse_benchmark(name, raw, base_dir)
    check_objective_metrics(tune, entries)
    return entries


_PEP_LEVELS = re.compile(r"^(auc|ap)_L\d+$")  # one per caption level of the data


def produced_metrics(entry: Any) -> tuple[set[str], re.Pattern[str] | None] | None:
    """The metric keys a benchmark entry's result holds (names, and a pattern for the per-level
    ones), known from its protocol and options before anything runs; None where they depend on the
    data (compositional categories, the analysis), which are then found when the first trial scores."""
    if isinstance(entry, ZeroShotEntry):
        return {"top1", "mean_per_class", "n_classes_evaluated", *(HIERARCHY_METRICS if entry.taxonomy else ())}, None
    if isinstance(entry, RetrievalEntry):
        return {f"{d}_R@{k}" for d in ("i2t", "t2i") for k in entry.ks}, None
    if isinstance(entry, PepEntry):
        return {"auc", "ap", "raw_auc", "raw_ap", "n_positive", "n_negative", "mean_phi_positive",
                "mean_phi_negative", "zero_score_share"}, _PEP_LEVELS
    return None


def check_objective_metrics(tune: TuneConfig, entries: dict[str, Any]) -> None:
    """Each objective term's metric one its benchmark produces, before any trial trains (a typo used
    to surface as an Optuna traceback once trial 0 had trained and scored)."""
    for i, term in enumerate(tune.objective):
        known = produced_metrics(entries[term.benchmark])
        if known is None:
            continue
        names, pattern = known
        if term.metric not in names and not (pattern is not None and pattern.match(term.metric)):
            listed = sorted(names) + ([pattern.pattern] if pattern is not None else [])
            raise ConfigError(f"tune.objective[{i}].metric: {term.metric!r} is not a metric of benchmarks."
                              f"{term.benchmark} (protocol {entries[term.benchmark].protocol}); its metrics: {listed}")


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
