"""The ``tune:`` section of the workflow config, typed and checked by ``argent.config.from_dict``.

An unknown key fails with its full path and the allowed keys (``tune.sampler: unknown key(s)
['sed']; allowed: [...]``), a wrong type with the path, the value and the expected type. What the
types cannot say (ranges, a non-empty objective, a searchable variant field) is checked after, by
``check_tune``, with the same kind of message. docs/tuning.md describes every key.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, check_name, from_dict, load_config, parse_override
from argent.tuning.space import ParamSpace, check_space

__all__ = [
    "SamplerConfig",
    "PrunerConfig",
    "ObjectiveTerm",
    "TuneConfig",
    "parse_tune",
    "load_tune",
]


@dataclass
class SamplerConfig:
    name: Literal["tpe", "random"] = "tpe"
    seed: int = 0  # budget slot k samples with seed + k: the same slot draws the same values
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
    """``weight × metric`` of one validation benchmark (``benchmarks.<name>.split: val``)."""

    benchmark: str = ""
    metric: str = ""  # key of the result's ``metrics`` (dotted for nested values)
    weight: float = 1.0


def _default_space() -> dict[str, ParamSpace]:
    # γ₁, γ₂ ∈ [0.01, 1] and β ∈ [0.01, 2], all on a log scale (docs/tuning.md).
    return {
        "entailment_weight": ParamSpace(low=0.01, high=1.0, log=True),
        "norm_reg_weight": ParamSpace(low=0.01, high=1.0, log=True),
        "huber_beta": ParamSpace(low=0.01, high=2.0, log=True),
    }


@dataclass
class TuneConfig:
    """The ``tune:`` section; config/config.yaml holds the default study, docs/tuning.md every key."""

    study: str = "argent_weights"  # the workflow schema's default too (tests/unit/config/test_config.py)
    base_variant: str = "argent"
    # The bases tuned, each in a study of its own (``studies``); [] = [base_variant]. Set, its first is base_variant.
    base_variants: list[str] = field(default_factory=list)
    size: str = "tiny"
    seed: int = 0
    n_trials: int = 20
    storage: str = ""  # "" -> sqlite:///<abs out>/optuna.db; any SQLAlchemy URL otherwise
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    pruner: PrunerConfig = field(default_factory=PrunerConfig)
    space: dict[str, ParamSpace] = field(default_factory=_default_space)
    objective: list[ObjectiveTerm] = field(default_factory=list)
    direction: Literal["maximize", "minimize"] = "maximize"
    train_overrides: list[str] = field(default_factory=list)  # key.path=value, as ``argent train --set``
    report_every: int = 0  # validation score every N steps (sets train.checkpoint_every); 0 = checkpoint_every
    heartbeat_interval: int = 60  # seconds; 0 disables heartbeats (a killed trial then stays RUNNING)
    grace_period: int = 0  # seconds without heartbeat before a trial is stale; 0 = 2 × heartbeat_interval
    max_retry: int = 2  # re-runs of a trial whose worker died; a later death counts as a failure
    store_wait: int = 600  # seconds a worker waits for a SQLite study store another process keeps locked
    # Read by the workflow only (accepted here so the section validates as a whole):
    enabled: bool | Literal["auto"] = False
    requires: list[str] = field(default_factory=list)
    train_best: bool = True
    workers: int = 1

    def fingerprint(self) -> dict[str, Any]:
        """What makes trials comparable; a stored study with another fingerprint is refused."""
        keep = ("base_variant", "size", "seed", "space", "objective", "direction", "train_overrides", "report_every")
        d = dataclasses.asdict(self)
        return {k: d[k] for k in keep}

    def bases(self) -> list[str]:
        """The variants tuned, in order: ``base_variants``, else ``[base_variant]``."""
        return list(self.base_variants) or [self.base_variant]

    def study_of(self, base: str) -> str:
        """The study that tunes ``base``: ``study`` for the first base (its folder never moves),
        ``<study>-<base>`` for each other."""
        bases = self.bases()
        if base not in bases:
            raise ConfigError(f"tune.base_variants: {base!r} is not tuned; tuned: {bases}")
        return self.study if base == bases[0] else f"{self.study}-{base}"

    def studies(self) -> dict[str, TuneConfig]:
        """{study name: that study's own section}: one base each; space, objective, budget, sampler seed
        and every other key the same (a study's fingerprint names its base)."""
        return {self.study_of(b): dataclasses.replace(self, study=self.study_of(b), base_variant=b, base_variants=[])
                for b in self.bases()}


def check_tune(cfg: TuneConfig, path: str = "tune") -> TuneConfig:
    """The checks the types cannot express; every message starts with the key's path."""
    if cfg.study:
        check_name(cfg.study, f"{path}.study")
    check_name(cfg.base_variant, f"{path}.base_variant")
    for i, base in enumerate(cfg.base_variants):
        check_name(base, f"{path}.base_variants[{i}]")
        if base in cfg.base_variants[:i]:
            raise ConfigError(f"{path}.base_variants: {base!r} is listed twice; each base is tuned in one study")
        if cfg.study:
            check_name(cfg.study_of(base), f"{path}.base_variants[{i}] (its study, <study>-<base>)")
    check_name(cfg.size, f"{path}.size")
    for key in ("n_trials", "workers", "store_wait"):
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
        check_space(name, spec, f"{path}.space.{name}")
    if not cfg.objective:
        raise ConfigError(f"{path}.objective: needs at least one {{benchmark, metric, weight}} term")
    for i, term in enumerate(cfg.objective):
        where = f"{path}.objective[{i}]"
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


def parse_tune(raw: Any, path: str = "tune") -> TuneConfig:
    """Validate a ``tune:`` mapping into a ``TuneConfig``."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping, got {type(raw).__name__}")
    cfg = from_dict(TuneConfig, dict(raw), path)
    if cfg.base_variants:  # the list decides; a base_variant written beside it must be its first
        if "base_variant" in raw and cfg.base_variant != cfg.base_variants[0]:
            raise ConfigError(f"{path}.base_variant: {cfg.base_variant!r} is not the first of {path}.base_variants "
                              f"{cfg.base_variants}; the bases tuned are {path}.base_variants (its first keeps "
                              f"{path}.study): set that list alone, e.g. --set {path}.base_variants=[{cfg.base_variant}]")
        cfg.base_variant = cfg.base_variants[0]
    return check_tune(cfg, path)


def tune_section(raw: dict[str, Any], base_dir: Path | None = None) -> TuneConfig:
    """A workflow config mapping's ``tune:`` section, typed; a config without one is an error."""
    if "tune" not in raw:
        raise ConfigError("no 'tune:' section (docs/tuning.md lists its keys)")
    return parse_tune(raw["tune"])


def load_tune(config_path: str | Path, sets: list[str] | tuple[str, ...] = (),
              study: str | None = None, merge_default: bool = True) -> tuple[TuneConfig, dict[str, Any]]:
    """(TuneConfig of one study, the whole workflow config) from a config file (merged over
    config/config.yaml unless ``merge_default`` is false, as Snakemake reads it). ``study``: one of the
    config's studies (``TuneConfig.studies``: its base is tuned), else the first base's study under
    that name; none: the first base's study."""
    workflow = load_config(config_path, sets, merge_default=merge_default)
    cfg = workflow.raw
    studies = workflow.tune.studies()
    tune = studies.get(study or "") or next(iter(studies.values()))
    if study:
        tune.study = check_name(study, "--study")
    if not tune.study:
        raise ConfigError(f"{config_path}: tune.study is empty and no --study was given")
    return tune, cfg
