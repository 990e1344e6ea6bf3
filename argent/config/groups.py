"""Experiment groups, resolved from the workflow config: each group's variants, sizes and seeds (``Group``,
``groups_section``), the config its jobs read (``group_config``: the base with the group's overrides), and what
one run of it trains (``run_experiment``) and is stamped with (``run_identity``; ``planned_identity`` with a
tuned variant's ``best.yaml``). The ``groups:`` and ``runs:`` sections as written are typed in
argent/config/group_entries.py.

Here, below every stage, because more than one reads it: the plan (argent/plan/groups.py adds the borrowing,
the groups left out and the checks at DAG build), and ``argent evaluate`` by hand, which checks that a run folder
of the results layout holds the run its group trains there without building the plan. Torch-free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from argent.config.convert import ConfigError, from_dict
from argent.config.experiment import ExperimentConfig, check_name, experiment_from_dict
from argent.config.group_entries import GroupEntry, runs_section
from argent.config.loading import deep_merge, strict_yaml
from argent.config.workflow import WorkflowConfig
from argent.io import ArgentError, ReadError
from argent.runs.documents import read_object
from argent.runs.layout import Results, run_dir

TUNED_SUFFIX = "-tuned"  # <base>-tuned: the best trial of the study that tunes <base>, retrained (base + best.yaml)
TUNED_VARIANT = "argent" + TUNED_SUFFIX  # the default's first tuned variant (its study: tune.study)


@dataclass(frozen=True)
class RunKey:
    group: str
    variant: str
    size: str
    seed: int

    @property
    def qualified(self) -> str:
        """``<group>/<variant>``: how tables and claims name a group's variant."""
        return f"{self.group}/{self.variant}"

    def __str__(self) -> str:
        return f"{self.group}/{self.variant}-{self.size}/seed{self.seed}"


@dataclass
class Group:
    """A group resolved: its sizes and seeds (``runs:``'s where it names none), its overrides as written."""

    name: str
    variants: list[str]
    sizes: list[str]
    seeds: list[int]
    overrides: dict[str, Any] = field(default_factory=dict)
    borrow_from: str = ""
    optional: bool = False
    enabled: bool = True

    def run_keys(self) -> list[RunKey]:
        return [RunKey(self.name, v, s, k) for v in self.variants for s in self.sizes for k in self.seeds]


def groups_section(cfg: dict[str, Any], base_dir: Path | None = None) -> dict[str, Group]:
    """Every group of ``cfg['groups']`` (disabled ones included), typed key by key, with ``runs:``'s
    sizes and seeds where a group names none; ``from`` chains end at a group that exists."""
    raw = cfg.get("groups")
    if not isinstance(raw, dict) or not raw:
        raise ConfigError("groups: missing or empty; name at least one experiment group (docs/scaling.md)")
    runs = runs_section(cfg)
    out: dict[str, Group] = {}
    for name, entry in raw.items():
        where = f"groups.{name}"
        check_name(name, "groups")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping, got {entry!r}")
        typed = from_dict(GroupEntry, entry, where)
        out[name] = Group(name=name, variants=list(typed.variants),
                          sizes=list(typed.sizes if typed.sizes is not None else runs.sizes),
                          seeds=list(typed.seeds if typed.seeds is not None else runs.seeds),
                          overrides=typed.overrides.written(), borrow_from=typed.borrow_from,
                          optional=typed.optional, enabled=typed.enabled)
    for group in out.values():  # `from` chains end (no cycle), at groups that exist
        seen, name = [group.name], group.borrow_from
        while name:
            if name not in out:
                raise ConfigError(f"groups.{seen[-1]}.from: {name!r} is not a group; known: {sorted(out)}")
            if name in seen:
                raise ConfigError(f"groups.{group.name}.from: a cycle {' -> '.join(seen + [name])}")
            seen.append(name)
            name = out[name].borrow_from
    return out


def group_config(cfg: dict[str, Any], group: Group) -> dict[str, Any]:
    """The workflow config one group's jobs read: the base config with the group's overrides on top,
    and its name as the MLflow tag ``experiment_group`` (tracking is outside the result hash)."""
    base = {k: v for k, v in cfg.items() if k != "groups"}
    merged = deep_merge(base, group.overrides)
    return deep_merge(merged, {"tracking": {"tags": {"experiment_group": group.name}}})


def tune_studies(cfg: dict[str, Any]) -> dict[str, str]:
    """{study name: its base variant} for each base the config tunes (``tune.base_variants``, else
    ``[tune.base_variant]``), in order; named by ``TuneConfig.studies`` (the typed ``tune:`` section)."""
    tune = WorkflowConfig({"tune": cfg.get("tune") or {}}).tune
    return {name: study.base_variant for name, study in tune.studies().items()}


def tuned_base(cfg: dict[str, Any], variant: str) -> str | None:
    """The base whose study's best trial ``variant`` retrains: ``B`` for ``B-tuned`` when the config
    tunes ``B``; None for every other name (a catalogue variant)."""
    if not variant.endswith(TUNED_SUFFIX):
        return None
    base = variant.removesuffix(TUNED_SUFFIX)
    return base if base in tune_studies(cfg).values() else None


def tuned_study(cfg: dict[str, Any], variant: str) -> str | None:
    """The study whose ``best.yaml`` the tuned ``variant`` trains with; None for any other variant."""
    base = tuned_base(cfg, variant)
    return None if base is None else next(s for s, b in tune_studies(cfg).items() if b == base)


def base_variant(cfg: dict[str, Any], variant: str) -> str:
    """A tuned variant trains as its study's base variant plus best.yaml on top; any other as itself."""
    return tuned_base(cfg, variant) or variant


def tuned_variant_file(cfg: dict[str, Any], results: Path, variant: str) -> Path | None:
    """The ``best.yaml`` of the study that tunes ``variant``'s base (``<base>-tuned``): what the train rule
    passes it with ``--variant-file``; None for a variant no study tunes."""
    study = tuned_study(cfg, variant)
    return None if study is None else Results(results).study_best(study)


def run_experiment(gcfg: dict[str, Any], key: RunKey, base_dir: Path,
                   variant_overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """The config the workflow trains for ``key`` from its group's config: the base variant (the
    tuned one's study base, ``variant_overrides`` its best.yaml) recorded under the run's own name,
    as the train rule's ``argent train --variant <base> --name <variant>`` does."""
    exp = experiment_from_dict(gcfg, base_variant(gcfg, key.variant), key.size, key.seed, base_dir=base_dir,
                               variant_overrides=variant_overrides)
    exp.variant_name = key.variant
    return exp


def run_identity(gcfg: dict[str, Any], key: RunKey, base_dir: Path) -> str:
    """The run's identity hash (``ExperimentConfig.result_hash``): the train rule's ``hash`` param, so
    Snakemake re-runs a training exactly when it changes; borrowing compares it too."""
    return run_experiment(gcfg, key, base_dir).result_hash()


def planned_identity(gcfg: dict[str, Any], key: RunKey, base_dir: Path, results: Path) -> str | None:
    """The identity hash the workflow's train job stamps ``key``'s run with: its group's config ``gcfg``,
    the base variant recorded under the run's name (``run_experiment``), and for the tuned variant the
    study's ``best.yaml`` on top, read as ``argent train --variant-file`` reads it (None while the study
    has not written it: nothing to compare yet). For every other run it is the train rule's ``hash`` param."""
    extra = None
    best = tuned_variant_file(gcfg, results, key.variant)
    if best is not None:
        if not best.is_file():
            return None
        try:
            extra = (strict_yaml(best.read_text(), best) or {}).get("variant", {})
        except (yaml.YAMLError, AttributeError) as err:
            raise ConfigError(f"{best}: not a YAML mapping with a 'variant' section ({err})") from None
    try:
        return run_experiment(gcfg, key, base_dir, extra).result_hash()
    except ConfigError as err:
        raise ConfigError(f"config for run {key}: {err}") from None


# ---- the planned identities, as the workflow hands them to its verbs -------------------------------------------


def planned_runs_text(hashes: dict[RunKey, str | None]) -> str:
    """The text of ``Results.planned_runs``: {"runs": {"<group>/<variant>-<size>/seed<k>": hash, ...}} for every run
    the DAG build trains at home (a borrowed run is not listed; null: a tuned run before its study's best.yaml)."""
    return json.dumps({"runs": {str(key): value for key, value in hashes.items()}}, indent=1, sort_keys=True) + "\n"


def read_planned_runs(path: Path) -> dict[str, str | None]:
    """``Results.planned_runs`` read back: {run: hash or None}; a damaged file is a ``ReadError`` naming it."""
    fix = "delete it; the workflow's next DAG build (snakemake) writes it again"
    runs = read_object(path, "the planned runs", fix).get("runs")
    if not isinstance(runs, dict) or not all(isinstance(h, str) or h is None for h in runs.values()):
        raise ReadError(f"{path}: 'runs' is not a map of run -> hash; {fix}")
    return runs


class IdentityError(ArgentError, ValueError):
    """A file of a run folder (summary, evaluation) carries another identity hash than the run the plan
    trains there: its numbers belong to another config, variant or ``--name``."""


def refuse_other_identity(path: Path, found: str | None, key: RunKey, expected: str | None, results: Path) -> None:
    """An ``IdentityError`` when the file at ``path`` carries another hash (``found``) than the run ``key`` is
    planned with (``expected``); a file without one, or a run without a planned hash yet, is not compared."""
    if found is None or expected is None or found == expected:
        return
    folder = run_dir(results, key.group, key.variant, key.size, key.seed)
    raise IdentityError(
        f"{path}: carries config hash {found}, but the plan trains {key} into {folder} with hash {expected}; "
        f"its numbers belong to another run (another config, variant or --name). Fix: re-run the workflow "
        f"(snakemake retrains the run and re-evaluates it), or `argent restamp --run {folder} --config <the "
        f"workflow config>` if it was stamped before run identity v1, or move {folder} (and its evaluations) "
        f"out of {results}")
