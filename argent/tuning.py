"""``argent tune``: an Optuna study over a variant's loss weights (γ₁, γ₂, Huber β by default).

    argent tune --config config/config.yaml --study argent_weights [--n-trials N] [--storage URL]
                [--out results/tune/<study>] [--no-export | --export-only] [--threads T]

The study is the ``tune:`` section of the workflow config (``TuneConfig``; strict: an unknown key
fails as ``tune.<key>``). Each trial trains the base variant with the sampled fields as variant
overrides into ``<out>/trials/<number>/`` (a normal run folder), reports the objective, a weighted
sum of metrics of **validation** benchmarks (``benchmarks.<name>.split: val`` is required), at every
checkpoint for the pruner, and returns it at the end.

Many workers (Snakemake jobs, processes, cluster nodes) share one study through its storage: a
SQLite file ``<out>/optuna.db`` by default, or any SQLAlchemy URL. The trial budget ``n_trials``
counts finished trials (COMPLETE, PRUNED, FAIL) plus RUNNING and WAITING ones, so the workers
together run exactly the budget: the budget check and ``study.ask`` happen under a file lock in
``<out>`` (workers must share that folder; they share the outputs anyway). A worker killed
mid-trial stops its heartbeat; once the grace period has passed another (or the next) worker
marks the trial FAIL and re-runs its parameters as a new trial (that stale FAIL is then not
counted). A worker only leaves when no trial is left to run and none is running elsewhere, so
the last one out sees the finished study. Raising ``n_trials`` and running again extends a study;
a study stored with another fingerprint (space, objective, base run config, validation data) is
refused. On a cluster, use a server database (PostgreSQL) rather than SQLite on a network disk.

Trial outcomes: a pruned trial is PRUNED; a trial whose training diverges (``TrainingDiverged``)
or whose objective is NaN is FAIL and the study goes on; any other error marks the trial FAIL and
stops the worker (a bug or bad data should be looked at). Interrupting a worker (Ctrl-C, SIGTERM,
SIGKILL) leaves its trial RUNNING; it goes stale and is retried.

``export_study`` (``--export-only``, and by default at the end of a worker) writes from the
storage alone: ``best.yaml`` (``variant:`` mapping, the format ``argent train --variant-file``
reads, plus metadata), ``trials.csv``, ``optimization_history.png``, ``param_importances.png``
and ``summary.json``, all atomically. MLflow mirrors the study (a parent run) and every trial (a
nested run with ``mlflow.parentRunId``; the trial's training logs into the same run); tracking is
best effort through ``argent.engine.tracking.Tracker`` and never stops the study.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import math
import os
import sys
import time
import typing
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from argent.io import atomic_output
from argent.config import (
    ConfigError,
    TrackingConfig,
    VariantConfig,
    check_name,
    deep_merge,
    experiment_from_dict,
    from_dict,
    load_yaml,
    parse_override,
)

__all__ = [
    "TuneConfig",
    "ParamSpace",
    "StudySpec",
    "TrialContext",
    "TuneError",
    "parse_tune",
    "load_tune",
    "study_spec",
    "open_study",
    "sample_params",
    "variant_overrides",
    "budget_used",
    "run_study",
    "export_study",
    "validation_benchmarks",
    "ValidationScorer",
    "TrainingObjective",
    "main",
]

log = logging.getLogger("argent.tune")

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


class TuneError(RuntimeError):
    """The study cannot go on (storage holds a different study, an objective metric is unknown, ...)."""


# --------------------------------------------------------------------------------------------
# The ``tune:`` section
# --------------------------------------------------------------------------------------------


@dataclass
class ParamSpace:
    """One searched variant field: a float/int range (``low``, ``high``, ``log``, ``step``) or ``choices``."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: list[Any] | None = None
    type: Literal["auto", "float", "int", "categorical"] = "auto"


@dataclass
class SamplerConfig:
    name: Literal["tpe", "random"] = "tpe"
    seed: int = 0  # trial k samples with seed + k: reproducible alone, never duplicated in parallel
    n_startup_trials: int = 10  # TPE: random trials before the model kicks in (Optuna's default)
    constant_liar: bool = True  # TPE: treat running trials as bad, so parallel workers spread out


@dataclass
class PrunerConfig:
    name: Literal["median", "percentile", "none"] = "median"
    n_startup_trials: int = 5  # trials that are never pruned and form the reference
    n_warmup_steps: int = 0  # training steps before pruning starts within a trial
    interval_steps: int = 1
    n_min_trials: int = 1
    percentile: float = 25.0  # percentile pruner only


@dataclass
class ObjectiveTerm:
    benchmark: str = ""  # a ``benchmarks:`` entry with ``split: val``
    metric: str = ""  # key of the result's ``metrics`` (dotted for nested values)
    weight: float = 1.0


@dataclass
class ObjectiveConfig:
    terms: list[ObjectiveTerm] = field(default_factory=list)
    direction: Literal["maximize", "minimize"] = "maximize"


def _default_space() -> dict[str, ParamSpace]:
    # method.md §9: γ₁, γ₂ ∈ [0.01, 1] and β ∈ [0.01, 2], all on a log scale.
    return {
        "entailment_weight": ParamSpace(low=0.01, high=1.0, log=True),
        "norm_reg_weight": ParamSpace(low=0.01, high=1.0, log=True),
        "huber_beta": ParamSpace(low=0.01, high=2.0, log=True),
    }


@dataclass
class TuneConfig:
    """The ``tune:`` section of the workflow config, e.g.::

        tune:
          study: argent_weights
          base_variant: argent
          size: tiny
          n_trials: 8
          sampler: {name: tpe, seed: 0, n_startup_trials: 4}
          pruner: {name: median, n_startup_trials: 2, n_warmup_steps: 100}   # steps = training steps
          space:                                    # default: the three below (method.md §9)
            entailment_weight: {low: 0.01, high: 1.0, log: true}
            norm_reg_weight: {low: 0.01, high: 1.0, log: true}
            huber_beta: {low: 0.01, high: 2.0, log: true}
            # adaptive_weight: {choices: [intra, any]};  cement.margin_max: {low: 0.05, high: 0.2}
          objective:
            terms:                                  # benchmarks with split: val only
              - {benchmark: hiershapes_pep_val, metric: auc, weight: 1.0}
              - {benchmark: hiershapes_zeroshot_val, metric: top1, weight: 1.0}
            direction: maximize
          train_overrides: [train.steps=600]
          report_every: 100
    """

    study: str = ""
    base_variant: str = "argent"
    size: str = "tiny"
    seed: int = 0
    n_trials: int = 20
    storage: str = ""  # "" -> sqlite:///<abs out>/optuna.db; any SQLAlchemy URL otherwise
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    pruner: PrunerConfig = field(default_factory=PrunerConfig)
    space: dict[str, ParamSpace] = field(default_factory=_default_space)
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    train_overrides: list[str] = field(default_factory=list)  # key.path=value, as ``argent train --set``
    report_every: int = 0  # validation score every N steps (sets train.checkpoint_every); 0 = checkpoint_every
    heartbeat_interval: int = 60  # seconds; 0 disables heartbeats (a killed trial then stays RUNNING)
    grace_period: int = 0  # seconds without heartbeat before a trial is stale; 0 = 2 × heartbeat_interval
    max_retry: int = 2  # re-runs of a trial whose worker died; a later death counts as a failure
    # Read by the workflow only (accepted here so the section validates as a whole):
    enabled: bool | Literal["auto"] = False
    requires: list[str] = field(default_factory=list)
    train_best: bool = True
    workers: int = 1

    def fingerprint(self) -> dict[str, Any]:
        """What makes trials comparable; a stored study with another fingerprint is refused."""
        keep = ("base_variant", "size", "seed", "space", "objective", "train_overrides", "report_every")
        return {k: dataclasses.asdict(self)[k] for k in keep}


def _check_keys(cls: type, raw: Any, path: str) -> None:
    """Unknown keys anywhere in ``raw`` fail as ``<path>.<key>``, before any type conversion."""
    if not isinstance(raw, dict):
        return
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key, value in raw.items():
        if key not in names:
            raise ConfigError(f"{path}.{key}: unknown key; allowed: {names}")
        tp = hints[key]
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if dataclasses.is_dataclass(tp):
            _check_keys(tp, value, f"{path}.{key}")
        elif origin is list and args and dataclasses.is_dataclass(args[0]) and isinstance(value, list):
            for i, item in enumerate(value):
                _check_keys(args[0], item, f"{path}.{key}[{i}]")
        elif origin is dict and args and dataclasses.is_dataclass(args[1]) and isinstance(value, dict):
            for name, item in value.items():
                _check_keys(args[1], item, f"{path}.{key}.{name}")


def _variant_field_type(name: str) -> Any:
    """Type of a (dotted) VariantConfig field, e.g. ``huber_beta`` or ``cement.margin_max``."""
    cls: Any = VariantConfig
    parts = name.split(".")
    for i, part in enumerate(parts):
        hints = typing.get_type_hints(cls)
        if part not in hints:
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: not a variant field; allowed: {sorted(hints)}")
        cls = hints[part]
        if i < len(parts) - 1 and not dataclasses.is_dataclass(cls):
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: has no sub-fields")
    if dataclasses.is_dataclass(cls):
        raise ConfigError(f"{name}: is a section; search its fields ({name}.<field>)")
    return cls


def _check_space(name: str, spec: ParamSpace, path: str) -> None:
    try:
        tp = _variant_field_type(name)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    if spec.type == "auto":
        spec.type = "categorical" if spec.choices is not None else ("int" if tp is int else "float")
    if spec.type == "categorical":
        if not spec.choices:
            raise ConfigError(f"{path}.choices: a categorical parameter needs a non-empty list of choices")
        if spec.low is not None or spec.high is not None or spec.log or spec.step is not None:
            raise ConfigError(f"{path}: give either choices or low/high/log/step, not both")
        for choice in spec.choices:  # what Optuna can store as a categorical value
            if choice is not None and not isinstance(choice, (bool, int, float, str)):
                raise ConfigError(f"{path}.choices: {choice!r} is not a scalar (null, bool, number or string)")
        return
    # An int range of a float field is allowed (e.g. h_tau in {1, 2, 3}); a range of a str/bool field is not.
    if tp not in (int, float):
        raise ConfigError(f"{path}: field type {tp} is not numeric; give choices: [...] instead of low/high")
    if spec.choices is not None:
        raise ConfigError(f"{path}: give either choices or low/high/log/step, not both")
    if spec.low is None or spec.high is None:
        raise ConfigError(f"{path}: low and high are required for a {spec.type} range")
    if not spec.low < spec.high:
        raise ConfigError(f"{path}: low ({spec.low}) must be < high ({spec.high})")
    if spec.log and spec.low <= 0:
        raise ConfigError(f"{path}.low: a log-scale range needs low > 0")
    if spec.log and spec.step is not None:
        raise ConfigError(f"{path}: step and log cannot be combined (Optuna)")
    if spec.type == "int":
        for key in ("low", "high", "step"):
            value = getattr(spec, key)
            if value is not None and float(value) != int(value):
                raise ConfigError(f"{path}.{key}: an int range needs integer bounds, got {value}")


def parse_tune(raw: Any, path: str = "tune") -> TuneConfig:
    """Validate a ``tune:`` mapping. Every error names its key path (``tune.<key>...``)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping, got {type(raw).__name__}")
    _check_keys(TuneConfig, raw, path)
    cfg = from_dict(TuneConfig, dict(raw), path)
    if cfg.study:
        check_name(cfg.study, f"{path}.study")
    check_name(cfg.base_variant, f"{path}.base_variant")
    check_name(cfg.size, f"{path}.size")
    for key in ("n_trials", "workers"):
        if getattr(cfg, key) < 1:
            raise ConfigError(f"{path}.{key}: must be >= 1, got {getattr(cfg, key)}")
    for key in ("report_every", "heartbeat_interval", "grace_period", "max_retry"):
        if getattr(cfg, key) < 0:
            raise ConfigError(f"{path}.{key}: must be >= 0, got {getattr(cfg, key)}")
    if cfg.grace_period and cfg.heartbeat_interval and cfg.grace_period <= cfg.heartbeat_interval:
        raise ConfigError(f"{path}.grace_period: must exceed heartbeat_interval ({cfg.heartbeat_interval} s)")
    if cfg.sampler.n_startup_trials < 0:
        raise ConfigError(f"{path}.sampler.n_startup_trials: must be >= 0")
    p = cfg.pruner
    if min(p.n_startup_trials, p.n_warmup_steps) < 0 or p.interval_steps < 1 or p.n_min_trials < 1:
        raise ConfigError(f"{path}.pruner: n_startup_trials, n_warmup_steps >= 0; interval_steps, n_min_trials >= 1")
    if not 0 < p.percentile < 100:
        raise ConfigError(f"{path}.pruner.percentile: must be in (0, 100), got {p.percentile}")
    if not cfg.space:
        raise ConfigError(f"{path}.space: needs at least one parameter")
    for name, spec in cfg.space.items():
        _check_space(name, spec, f"{path}.space.{name}")
    if not cfg.objective.terms:
        raise ConfigError(f"{path}.objective.terms: needs at least one {{benchmark, metric, weight}} term")
    for i, term in enumerate(cfg.objective.terms):
        where = f"{path}.objective.terms[{i}]"
        if not term.benchmark or not term.metric:
            raise ConfigError(f"{where}: benchmark and metric are required")
        check_name(term.benchmark, f"{where}.benchmark")
        if not math.isfinite(term.weight) or term.weight == 0:
            raise ConfigError(f"{where}.weight: must be a finite non-zero number")
    for i, text in enumerate(cfg.train_overrides):
        try:
            parse_override(text)
        except ConfigError as err:
            raise ConfigError(f"{path}.train_overrides[{i}]: {err}") from None
    return cfg


def load_tune(config_path: str | Path, study: str | None = None) -> tuple[TuneConfig, dict[str, Any]]:
    """(TuneConfig, the whole workflow config) from a workflow config file; ``study`` renames the study."""
    cfg = load_yaml(config_path)
    if "tune" not in cfg:
        raise ConfigError(f"{config_path}: no 'tune:' section (see argent/tuning.py for its keys)")
    tune = parse_tune(cfg["tune"])
    if study:
        tune.study = check_name(study, "--study")
    if not tune.study:
        raise ConfigError(f"{config_path}: tune.study is empty and no --study was given")
    return tune, cfg


# --------------------------------------------------------------------------------------------
# Search space
# --------------------------------------------------------------------------------------------


def sample_params(trial: Any, space: dict[str, ParamSpace]) -> dict[str, Any]:
    """Draw every searched field for ``trial`` (an ``optuna.Trial``): name -> value."""
    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec.type == "categorical":
            out[name] = trial.suggest_categorical(name, spec.choices)
        elif spec.type == "int":
            out[name] = trial.suggest_int(name, int(spec.low), int(spec.high), step=int(spec.step or 1), log=spec.log)
        else:
            out[name] = trial.suggest_float(name, spec.low, spec.high, step=spec.step, log=spec.log)
    return out


def variant_overrides(params: dict[str, Any]) -> dict[str, Any]:
    """Flat (dotted) parameter names -> the nested mapping ``VariantConfig`` / ``best.yaml`` take."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        node = out
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


# --------------------------------------------------------------------------------------------
# Storage and study
# --------------------------------------------------------------------------------------------


@dataclass
class StudySpec:
    """Everything a worker needs to join a study: the config plus where things live."""

    tune: TuneConfig
    out_dir: Path
    storage_url: str
    fingerprint: dict[str, Any] = field(default_factory=dict)
    tracking: TrackingConfig = field(default_factory=lambda: TrackingConfig(enabled=False))

    @property
    def experiment(self) -> str:
        return f"{self.tracking.experiment}-tune-{self.tune.study}"


def study_spec(
    tune: TuneConfig,
    out_dir: str | Path,
    tracking: TrackingConfig | None = None,
    results_dir: str | Path = "results",
    fingerprint: dict[str, Any] | None = None,
) -> StudySpec:
    """Resolve storage (default: SQLite in ``out_dir``) and the MLflow URI (default: under ``results_dir``)."""
    from argent.engine.tracking import default_uri

    out = Path(out_dir).resolve()
    storage = tune.storage or f"sqlite:///{out / 'optuna.db'}"
    tracking = dataclasses.replace(tracking) if tracking else TrackingConfig(enabled=False)
    if tracking.enabled and not tracking.uri:
        tracking.uri = default_uri(Path(results_dir))
    return StudySpec(tune=tune, out_dir=out, storage_url=storage,
                     fingerprint=fingerprint if fingerprint is not None else tune.fingerprint(), tracking=tracking)


@contextlib.contextmanager
def _study_lock(out_dir: Path) -> Iterator[None]:
    """Exclusive lock of the study folder: budget check + ask, storage and parent-run creation."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".study.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _quiet_optuna() -> None:
    import optuna

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")
    # We run the heartbeat ourselves around ask/tell (the budget check and ask must be atomic).
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _storage(spec: StudySpec, heartbeat: bool = True) -> Any:
    import optuna

    tune = spec.tune
    # SQLite: wait for a busy database instead of failing at once (several workers write to it).
    engine = {"connect_args": {"timeout": 120}} if spec.storage_url.startswith("sqlite") else {"pool_pre_ping": True}
    kwargs: dict[str, Any] = {}
    if heartbeat and tune.heartbeat_interval:
        retry_cls = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
        retry = (retry_cls or optuna.storages.RetryFailedTrialCallback)(max_retry=tune.max_retry)
        kwargs = {"heartbeat_interval": tune.heartbeat_interval, "grace_period": tune.grace_period or None,
                  "heartbeat_stale_trial_callback" if retry_cls else "failed_trial_callback": retry}
    try:
        return optuna.storages.RDBStorage(spec.storage_url, engine_kwargs=engine, **kwargs)
    except Exception as err:  # sqlalchemy's OperationalError & co (a lazy import there): unreachable, bad URL
        if type(err).__module__.split(".")[0] != "sqlalchemy":
            raise
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        raise TuneError(f"cannot open the study storage {_safe_url(spec.storage_url)} (tune.storage / --storage): "
                        f"{reason}. Check that the database server runs and the URL is right.") from None


def _sampler(cfg: SamplerConfig, trial_number: int) -> Any:
    import optuna

    seed = cfg.seed + trial_number
    if cfg.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=cfg.n_startup_trials, constant_liar=cfg.constant_liar)


def _pruner(cfg: PrunerConfig) -> Any:
    import optuna

    common = dict(n_startup_trials=cfg.n_startup_trials, n_warmup_steps=cfg.n_warmup_steps,
                  interval_steps=cfg.interval_steps, n_min_trials=cfg.n_min_trials)
    if cfg.name == "median":
        return optuna.pruners.MedianPruner(**common)
    if cfg.name == "percentile":
        return optuna.pruners.PercentilePruner(cfg.percentile, **common)
    return optuna.pruners.NopPruner()


def open_study(spec: StudySpec, heartbeat: bool = True) -> Any:
    """Create the study in its storage or join it; refuse one made with another fingerprint."""
    import optuna

    _quiet_optuna()
    tune = spec.tune
    with _study_lock(spec.out_dir):
        study = optuna.create_study(
            storage=_storage(spec, heartbeat), study_name=tune.study, direction=tune.objective.direction,
            sampler=_sampler(tune.sampler, 0), pruner=_pruner(tune.pruner), load_if_exists=True,
        )
        stored = study.user_attrs.get("argent_fingerprint")
        if stored is None:
            study.set_user_attr("argent_fingerprint", spec.fingerprint)
        elif stored != json.loads(json.dumps(spec.fingerprint)):
            raise TuneError(
                f"study {tune.study!r} in {_safe_url(spec.storage_url)} was made with another tune/run config "
                f"(space, objective, base variant, training settings or data differ); its trials are not "
                f"comparable. Use a new --study name, or delete the study's storage to start over."
            )
    direction = study.direction.name.lower()
    if direction != tune.objective.direction:
        raise TuneError(f"study {tune.study!r} was created to {direction}, the config says {tune.objective.direction}")
    return study


def load_existing_study(spec: StudySpec) -> Any:
    """The stored study (read-only use: export); a clear error when it does not exist."""
    import optuna

    _quiet_optuna()
    missing = TuneError(f"no study {spec.tune.study!r} in {_safe_url(spec.storage_url)}; run argent tune first")
    if spec.storage_url.startswith("sqlite:///") and not Path(spec.storage_url[len("sqlite:///"):]).is_file():
        raise missing  # do not leave an empty database behind
    try:
        return optuna.load_study(study_name=spec.tune.study, storage=_storage(spec, heartbeat=False))
    except KeyError:
        raise missing from None


def _safe_url(url: str) -> str:
    """A storage URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


# --------------------------------------------------------------------------------------------
# The trial budget
# --------------------------------------------------------------------------------------------


def _retried(trials: list[Any]) -> set[int]:
    """Numbers of stale trials that were re-queued (their retry carries ``failed_trial``)."""
    out = set()
    for t in trials:
        out.update(t.system_attrs.get("retry_history", []))
    return out


def budget_used(trials: list[Any]) -> int:
    """Trials that hold a slot of the budget: finished, running or queued; a stale FAIL whose
    parameters were re-queued is replaced by its retry and does not count."""
    from optuna.trial import TrialState

    retried = _retried(trials)
    return sum(1 for t in trials if t.state != TrialState.FAIL or t.number not in retried)


def finished_in_budget(trials: list[Any]) -> list[Any]:
    """The finished trials that count towards the budget (COMPLETE, PRUNED, FAIL not retried)."""
    retried = _retried(trials)
    return [t for t in trials if t.state.is_finished() and not (t.state.name == "FAIL" and t.number in retried)]


# --------------------------------------------------------------------------------------------
# MLflow mirror
# --------------------------------------------------------------------------------------------


def _tracker_cls() -> type:
    from argent.engine.tracking import Tracker

    class RunTracker(Tracker):
        """``Tracker`` plus tags; every call is best effort through ``Tracker._safe``."""

        def set_tags(self, tags: dict[str, Any]) -> None:
            for key, value in tags.items():
                if self.enabled:
                    self._safe(self._client.set_tag, self.run_id, key, str(value))

    return RunTracker


class StudyTracking:
    """Parent MLflow run of the study and one nested run per trial. Never raises."""

    def __init__(self, spec: StudySpec, study: Any) -> None:
        self.spec = spec
        self.enabled = spec.tracking.enabled
        self.parent: Any = None
        if not self.enabled:
            return
        storage_id = hashlib.sha256(spec.storage_url.encode()).hexdigest()[:12]
        tags = {"argent_run_id": f"tune:{spec.tune.study}:{storage_id}", "optuna_study": spec.tune.study,
                "base_variant": spec.tune.base_variant, "size": spec.tune.size, "kind": "study"}
        with _study_lock(spec.out_dir):  # one parent run, however many workers start at once
            self.parent = _tracker_cls()(spec.tracking.uri, spec.experiment, f"tune-{spec.tune.study}", tags)
        if self.parent.enabled:
            self.parent.log_params({"space": json.dumps(dataclasses.asdict(spec.tune)["space"]),
                                    "objective": json.dumps(dataclasses.asdict(spec.tune.objective)),
                                    "n_trials": spec.tune.n_trials, "sampler": spec.tune.sampler.name,
                                    "pruner": spec.tune.pruner.name})

    def trial_run(self, number: int, run_dir: Path, params: dict[str, Any], retry_of: int | None) -> Any:
        """The nested run of a trial; the trial's training (same run folder) logs into it too."""
        if not (self.enabled and self.parent is not None and self.parent.enabled):
            return None
        tags = {"argent_run_id": str(run_dir.resolve()), "mlflow.parentRunId": self.parent.run_id,
                "optuna_study": self.spec.tune.study, "optuna_trial": str(number), "kind": "trial"}
        if retry_of is not None:
            tags["optuna_retry_of"] = str(retry_of)
        run = _tracker_cls()(self.spec.tracking.uri, self.spec.experiment, f"trial-{number}", tags)
        run.set_tags({"mlflow.parentRunId": self.parent.run_id})  # also when an old run of this folder was found
        run.log_params({f"tune.{k}": v for k, v in params.items()})
        return run

    def close_trial(self, run: Any, state: str, value: float | None, attrs: dict[str, Any]) -> None:
        if run is None:
            return
        run.set_tags({"optuna_state": state, **{f"optuna_{k}": v for k, v in attrs.items() if k == "failure"}})
        if value is not None and math.isfinite(value):
            run.log_metrics([{"step": 0, "tune/final_value": value}])
        run.finish({"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state, "FAILED"))


# --------------------------------------------------------------------------------------------
# Running trials
# --------------------------------------------------------------------------------------------


@dataclass
class TrialContext:
    """What an objective gets: the Optuna trial, its sampled fields, its run folder."""

    trial: Any
    params: dict[str, Any]
    run_dir: Path
    run: Any = None  # MLflow trial run (or None)

    @property
    def number(self) -> int:
        return self.trial.number

    def report(self, value: float, step: int, scores: dict[str, float] | None = None, prune: bool = True) -> None:
        """Report an intermediate objective value (and mirror it to MLflow at ``step``); raises
        ``optuna.TrialPruned`` when ``prune`` and the pruner says so."""
        import optuna

        if self.run is not None:
            self.run.log_metrics([{"step": step, "tune/value": value, **{f"tune/{k}": v for k, v in (scores or {}).items()}}])
        if not math.isfinite(value):
            return  # a NaN would poison the pruner's medians; the final value decides this trial
        self.trial.report(value, step)
        if prune and self.trial.should_prune():
            raise optuna.TrialPruned(f"trial {self.number} pruned at step {step} (value {value:.4g})")


Objective = Callable[[TrialContext], float]


def _run_one(study: Any, trial: Any, spec: StudySpec, objective: Objective, tracking: StudyTracking) -> str:
    """Run ``trial`` to a final state and tell the storage. Returns the state name."""
    import optuna
    from optuna.storages._heartbeat import get_heartbeat_thread  # what study.optimize uses per trial

    # A fresh sampler per trial, seeded by its number (independent sampling happens at suggest time).
    study.sampler = _sampler(spec.tune.sampler, trial.number)
    params = sample_params(trial, spec.tune.space)
    run_dir = spec.out_dir / "trials" / str(trial.number)
    retry_of = trial.storage.get_trial_system_attrs(trial._trial_id).get("failed_trial")
    run = tracking.trial_run(trial.number, run_dir, params, retry_of)
    ctx = TrialContext(trial=trial, params=params, run_dir=run_dir, run=run)
    log.info("trial %d%s: %s", trial.number, f" (retry of {retry_of})" if retry_of is not None else "", params)
    value: float | None = None
    state = optuna.trial.TrialState.COMPLETE
    attrs: dict[str, Any] = {}
    start = time.perf_counter()
    with get_heartbeat_thread(trial._trial_id, study._storage):
        try:
            value = float(objective(ctx))
            if not math.isfinite(value):
                state, attrs["failure"] = optuna.trial.TrialState.FAIL, f"objective value is {value}"
        except optuna.TrialPruned as err:
            state, attrs["pruned"] = optuna.trial.TrialState.PRUNED, str(err)
        except Exception as err:
            if not _diverged(err):
                # A bug or bad data: record it, count the trial, stop this worker so someone looks.
                attrs["failure"] = f"{type(err).__name__}: {err}"
                _tell(study, trial, optuna.trial.TrialState.FAIL, None, attrs)
                tracking.close_trial(run, "FAIL", None, attrs)
                raise
            state, attrs["failure"] = optuna.trial.TrialState.FAIL, f"diverged: {err}"
    attrs["duration_s"] = round(time.perf_counter() - start, 3)
    _tell(study, trial, state, value, attrs)
    tracking.close_trial(run, state.name, value, attrs)
    log.info("trial %d: %s%s", trial.number, state.name, f" value={value:.6g}" if state.name == "COMPLETE" else
             f" ({attrs.get('failure') or attrs.get('pruned')})")
    return state.name


def _diverged(err: BaseException) -> bool:
    """A ``TrainingDiverged`` from the trainer. Looked up lazily: a worker whose objective never
    imported the trainer (cheap objectives) does not pay for importing torch."""
    trainer = sys.modules.get("argent.engine.trainer")
    return trainer is not None and isinstance(err, trainer.TrainingDiverged)


def _tell(study: Any, trial: Any, state: Any, value: float | None, attrs: dict[str, Any]) -> None:
    for key, val in attrs.items():
        trial.set_user_attr(key, str(val)[:2000] if isinstance(val, str) else val)
    if state.name == "COMPLETE":
        study.tell(trial, value)
    else:
        study.tell(trial, state=state)


def _next_trial(study: Any, spec: StudySpec) -> tuple[Any, bool]:
    """(a trial to run or None, whether trials are still running elsewhere). Atomic across workers."""
    import optuna
    from optuna.trial import TrialState

    with _study_lock(spec.out_dir):
        if spec.tune.heartbeat_interval:
            optuna.storages.fail_stale_trials(study)  # may re-queue a dead worker's trial as WAITING
        trials = study.get_trials(deepcopy=False)
        waiting = any(t.state == TrialState.WAITING for t in trials)
        if waiting or budget_used(trials) < spec.tune.n_trials:
            trial = study.ask()
            if spec.tune.heartbeat_interval:
                # Optuna never marks a RUNNING trial without any heartbeat as stale: record the first
                # one now, so that a worker killed before its heartbeat thread starts is still detected.
                study._storage.record_heartbeat(trial._trial_id)
            return trial, True
        return None, any(t.state == TrialState.RUNNING for t in trials)


def run_study(spec: StudySpec, objective: Objective, *, max_trials: int | None = None) -> dict[str, Any]:
    """Work on the study until its budget is spent and no trial runs elsewhere.

    ``objective(ctx) -> float`` trains/evaluates one trial (``ctx.report`` feeds the pruner).
    ``max_trials`` stops this worker after that many trials (tests, time-sliced jobs).
    Returns counts of the trials this worker ran, by final state.
    """
    study = open_study(spec)
    tracking = StudyTracking(spec, study)
    poll_s = max(1.0, min(5.0, spec.tune.heartbeat_interval / 2))
    ran: dict[str, int] = {}
    while max_trials is None or sum(ran.values()) < max_trials:
        trial, others_running = _next_trial(study, spec)
        if trial is None:
            if others_running and spec.tune.heartbeat_interval:
                time.sleep(poll_s)  # a running trial may finish, or go stale and come back as WAITING
                continue
            break
        state = _run_one(study, trial, spec, objective, tracking)
        ran[state] = ran.get(state, 0) + 1
    return {"study": spec.tune.study, "ran": ran}


# --------------------------------------------------------------------------------------------
# The training objective
# --------------------------------------------------------------------------------------------


def validation_benchmarks(tune: TuneConfig, workflow: dict[str, Any], base_dir: str | Path | None = None) -> dict[str, Any]:
    """The parsed benchmark entries the objective reads; each must declare ``split: val``.

    Tuning on the test split would leak it into the reported numbers, so a term whose
    ``benchmarks.<name>`` entry lacks ``split: val`` is refused.
    """
    from argent.evaluation.benchmarks import PROTOCOLS, parse_benchmark

    section = workflow.get("benchmarks") or {}
    entries = {}
    for i, term in enumerate(tune.objective.terms):
        name = term.benchmark
        if name in entries:
            continue
        if name not in section:
            raise ConfigError(f"tune.objective.terms[{i}].benchmark: {name!r} is not under benchmarks:; known: {sorted(section)}")
        raw = dict(section[name] or {})
        if raw.get("split") != "val":
            raise ConfigError(
                f"tune.objective.terms[{i}].benchmark: benchmarks.{name} is not a validation benchmark (split: "
                f"{raw.get('split')!r}); tuning may only read validation data. Point a benchmark entry at a "
                f"validation split and mark it split: val (never the test split)."
            )
        protocol = PROTOCOLS.get(raw.get("protocol"))
        if protocol is not None and "split" not in {f.name for f in dataclasses.fields(protocol)}:
            raw.pop("split")  # a tuning label for protocols whose entry has no split of its own
        entries[name] = parse_benchmark(name, raw, base_dir)
    return entries


def _metric(result: dict[str, Any], key: str, benchmark: str) -> float:
    node: Any = result["metrics"]
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            known = sorted(k for k in result["metrics"])
            raise TuneError(f"benchmark {benchmark!r} has no metric {key!r}; its metrics: {known}")
        node = node[part]
    if node is None or isinstance(node, bool) or not isinstance(node, (int, float)):
        return float("nan")  # n/a (e.g. PEP of a Euclidean model): the trial fails, the study goes on
    return float(node)


class ValidationScorer:
    """model -> (objective value, {benchmark/metric: score}) over the validation benchmarks."""

    def __init__(self, terms: list[ObjectiveTerm], entries: dict[str, Any]) -> None:
        self.terms = terms
        self.entries = entries

    def __call__(self, model: Any) -> tuple[float, dict[str, float]]:
        from argent.evaluation.runner import evaluate

        results = {name: evaluate(model, name, entry) for name, entry in self.entries.items()}
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
        from argent.engine.checkpoint import load_model
        from argent.engine.trainer import train

        exp = self.experiment_config(ctx.params)

        def on_checkpoint(step: int, model: Any) -> None:
            value, scores = self.scorer(model)
            ctx.report(value, step, scores)

        train(exp, ctx.run_dir, resume="no", on_checkpoint=on_checkpoint)
        model, _ = load_model(ctx.run_dir, device=exp.train.device)
        value, scores = self.scorer(model)
        ctx.trial.set_user_attr("scores", scores)
        ctx.report(value, exp.train.steps, scores, prune=False)  # the finished run is not pruned
        return value


def workflow_fingerprint(tune: TuneConfig, entries: dict[str, Any], objective: TrainingObjective) -> dict[str, Any]:
    """Tune fields + the base run's result hash + the validation entries' hashes."""
    from argent.evaluation.benchmarks import entry_hash

    base = objective.experiment_config({})
    return {**tune.fingerprint(), "run_hash": base.result_hash(),
            "benchmarks": {name: entry_hash(entry) for name, entry in sorted(entries.items())}}


def _check_space_values(tune: TuneConfig, objective: TrainingObjective) -> None:
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


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    with atomic_output(path) as tmp:
        write(tmp)


def _trials_frame(trials: list[Any], space: dict[str, ParamSpace]) -> Any:
    import polars as pl

    retried = _retried(trials)
    names = list(space) + sorted({k for t in trials for k in t.params} - set(space))
    rows = []
    for t in sorted(trials, key=lambda t: t.number):
        duration = t.duration.total_seconds() if t.duration is not None else None
        row = {
            "number": t.number,
            "state": t.state.name,
            "value": t.value,
            "n_intermediate": len(t.intermediate_values),
            "last_step": max(t.intermediate_values) if t.intermediate_values else None,
            "duration_s": duration,
            "retry_of": t.system_attrs.get("failed_trial"),
            "counts_in_budget": not (t.state.name == "FAIL" and t.number in retried),
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = draw()
    fig = ax.figure if hasattr(ax, "figure") else plt.gcf()
    fig.set_size_inches(7, 4.5)
    fig.tight_layout()
    _atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=90, format="png"))
    plt.close(fig)


def _note_figure(text: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=11)
    return ax


def export_study(spec: StudySpec) -> dict[str, Any]:
    """Write best.yaml, trials.csv, the figures and summary.json from the storage alone."""
    import optuna
    import optuna.visualization.matplotlib as ovm

    study = load_existing_study(spec)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    counted = finished_in_budget(trials)
    counts = {s.name: sum(t.state == s for t in trials) for s in optuna.trial.TrialState}
    out = spec.out_dir
    notes: list[str] = []

    frame = _trials_frame(trials, spec.tune.space)
    _atomic_write(out / "trials.csv", lambda tmp: frame.write_csv(tmp))

    best = None
    if complete:
        bt = study.best_trial
        best = {"number": bt.number, "value": bt.value, "params": bt.params}
        doc = {"variant": variant_overrides(bt.params),
               "study": spec.tune.study, "base_variant": spec.tune.base_variant, "size": spec.tune.size,
               "trial": bt.number, "value": bt.value, "direction": spec.tune.objective.direction,
               "objective": [dataclasses.asdict(t) for t in spec.tune.objective.terms],
               "scores": bt.user_attrs.get("scores", {}),
               "trials": {"in_budget": len(counted), "budget": spec.tune.n_trials, **{k.lower(): v for k, v in counts.items() if v}}}
        _atomic_write(out / "best.yaml", lambda tmp: tmp.write_text(yaml.safe_dump(doc, sort_keys=False)))
    else:
        (out / "best.yaml").unlink(missing_ok=True)
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
    summary = {"study": spec.tune.study, "storage": _safe_url(spec.storage_url), "budget": spec.tune.n_trials,
               "in_budget": len(counted), "finished": done, "counts": {k: v for k, v in counts.items() if v},
               "best": best, "notes": notes,
               "files": ["best.yaml", "trials.csv", "optimization_history.png", "param_importances.png"]}
    _atomic_write(out / "summary.json", lambda tmp: tmp.write_text(json.dumps(summary, indent=2, default=str) + "\n"))
    _track_export(spec, study, summary, done)
    return summary


def _track_export(spec: StudySpec, study: Any, summary: dict[str, Any], done: bool) -> None:
    tracking = StudyTracking(spec, study)
    parent = tracking.parent
    if parent is None or not parent.enabled:
        return
    if summary["best"]:
        parent.log_metrics([{"step": summary["best"]["number"], "tune/best_value": summary["best"]["value"]}])
        parent.set_tags({"best_trial": summary["best"]["number"]})
    parent.log_metrics([{"step": 0, **{f"trials/{k.lower()}": v for k, v in summary["counts"].items()}}])
    for name in ("best.yaml", "trials.csv", "optimization_history.png", "param_importances.png", "summary.json"):
        parent.log_artifact(spec.out_dir / name)
    if done:
        parent.finish("FINISHED")


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, required=True, help="workflow config with a tune: section")
    p.add_argument("--study", default=None, help="study name (default: tune.study); names the storage entry and <out>")
    p.add_argument("--n-trials", type=int, default=None, help="trial budget over all workers (default: tune.n_trials)")
    p.add_argument("--storage", default=None, help="SQLAlchemy URL (default: tune.storage, else sqlite in --out)")
    p.add_argument("--out", type=Path, default=None, help="study folder (default: <results>/tune/<study>)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--export-only", action="store_true", help="only write best.yaml, trials.csv, figures from storage")
    mode.add_argument("--no-export", action="store_true", help="run trials only (parallel workers; export later)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    return p


def _spec_from_args(args: argparse.Namespace) -> tuple[StudySpec, dict[str, Any]]:
    tune, workflow = load_tune(args.config, args.study)
    if args.n_trials is not None:
        if args.n_trials < 1:
            raise ConfigError("--n-trials: must be >= 1")
        tune.n_trials = args.n_trials
    if args.storage is not None:
        tune.storage = args.storage
    results = Path(workflow.get("results", "results"))
    out = args.out or results / "tune" / tune.study
    tracking = from_dict(TrackingConfig, workflow.get("tracking", {}) or {}, "tracking")
    return study_spec(tune, out, tracking, results), workflow


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        spec, workflow = _spec_from_args(args)
        if not args.export_only:
            if args.threads > 0:
                import torch

                torch.set_num_threads(args.threads)
            base_dir = args.config.resolve().parent.parent  # the project root, as load_experiment uses
            entries = validation_benchmarks(spec.tune, workflow)
            objective = TrainingObjective(spec.tune, workflow, base_dir, ValidationScorer(spec.tune.objective.terms, entries),
                                          spec.tracking, spec.experiment)
            _check_space_values(spec.tune, objective)
            spec.fingerprint = workflow_fingerprint(spec.tune, entries, objective)
            ran = run_study(spec, objective)
            print(json.dumps(ran))
        if not args.no_export:
            summary = export_study(spec)
            print(json.dumps({k: summary[k] for k in ("study", "in_budget", "budget", "finished", "best", "notes")}, default=str))
            if summary["best"] is None:
                print(f"argent tune: study {spec.tune.study!r} has no COMPLETE trial, so no best.yaml; see "
                      f"{spec.out_dir / 'trials.csv'} (failure column) for why trials failed or were pruned", file=sys.stderr)
                return 1
    except (ValueError, TuneError, FileNotFoundError) as err:  # ConfigError, BadDataError, no shards, ...
        print(f"argent tune: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
