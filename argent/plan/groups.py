"""The plan: the workflow config's experiment groups resolved into the runs to train.

A group is one experiment of the protocol (docs/scaling.md): its variants, sizes, seeds and the
training overrides that define its budget (merged over the base config). The groups themselves, typed and
resolved, and the config and identity of each run are argent/config/groups.py (``Group``, ``RunKey``,
``group_config``, ``run_identity``); here: which of them run, and which run trains where. A run's folder
includes its group: ``<results>/runs/<group>/<variant>-<size>/seed<k>``.

A group may borrow from another (``from: main``): a run it lists whose resolved training config
hashes the same as the other group's run of that variant/size/seed is not trained twice; its
evaluation is read from the other group's folder. A group that cannot run (hard-negative variants
without WordNet) is an error, or, with ``optional: true``, left out with one printed line.

The functions here take the config typed (``WorkflowConfig``: the workflow's, or a group's merged config,
``Plan.workflow``). The raw mapping (``.raw``) goes only where the mapping itself is the input: the per-run
merge and hash of argent/config/groups.py and experiment.py, and the variant layers merged over a catalogue entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import (
    ConfigError,
    ExperimentConfig,
    WorkflowConfig,
    check_seed,
    deep_merge,
    experiment_from_dict,
    load_variants,
    parse_override,
    variant_layers,
)
from argent.config.groups import (
    TUNED_SUFFIX,
    Group,
    RunKey,
    base_variant,
    group_config,
    groups_section,
    run_experiment,
    run_identity,
    tune_studies,
    tuned_base,
)


def uses_negatives(workflow: WorkflowConfig, variant: str, base_dir: Path) -> bool:
    catalogue = load_variants(_variants_file(workflow, base_dir))
    name = base_variant(workflow.raw, variant)
    if name not in catalogue:
        raise ConfigError(f"variant {name!r} is not in the variant catalogue; known: {sorted(catalogue)}")
    # the partial variant layers, merged as written over the catalogue's entry (as a run merges them)
    entry = deep_merge(catalogue[name], variant_layers(workflow.raw, name))
    return (entry.get("hard_negatives") or "none") != "none"


def _variants_file(workflow: WorkflowConfig, base_dir: Path) -> Path:
    path = Path(workflow.variants_file)
    return path if path.is_absolute() else base_dir / path


def negatives_available(workflow: WorkflowConfig, base_dir: Path) -> bool:
    zip_path = workflow.negatives.wordnet_zip
    return bool(zip_path) and (base_dir / zip_path).is_file()


@dataclass
class Plan:
    """What the DAG trains: every listed run, the run that trains it (itself or a borrowed one),
    and the groups left out, each with its reason."""

    groups: dict[str, Group]
    # group -> its merged config as written: the text of groups/<group>.yaml and what its runs' identities hash
    configs: dict[str, dict[str, Any]]
    home: dict[RunKey, RunKey]                       # listed run -> the run that trains it
    left_out: list[tuple[str, str]] = field(default_factory=list)
    unseen: list[tuple[str, str]] = field(default_factory=list)  # planned without its data (``without_data``)
    workflows: dict[str, WorkflowConfig] = field(default_factory=dict, repr=False)  # group -> ``workflow(group)``

    def workflow(self, group: str) -> WorkflowConfig:
        """The group's merged config, its sections typed (each parsed once)."""
        if group not in self.workflows:
            self.workflows[group] = WorkflowConfig(self.configs[group])
        return self.workflows[group]

    @property
    def trained(self) -> list[RunKey]:
        """Runs trained by this DAG, each once, in group order."""
        return [k for k, h in self.home.items() if k == h]

    def active(self) -> list[Group]:
        return [g for g in self.groups.values() if g.name in self.configs]

    def qualified_home(self) -> dict[tuple[str, str, str], str]:
        """(``group/variant``, size, seed as str) -> the ``group/variant`` whose folder holds the run."""
        return {(k.qualified, k.size, str(k.seed)): h.group for k, h in self.home.items()}


def build_plan(workflow: WorkflowConfig, base_dir: Path = Path("."),
               result_hash: Callable[[dict[str, Any], RunKey], str] | None = None, *,
               without_data: bool = False) -> Plan:
    """Resolve the groups. ``result_hash(group_config, key)`` hashes a run's training config
    (default: the resolved ``ExperimentConfig``); equal hashes let a group borrow a run.
    ``without_data``: a required group whose data is absent here is planned as if it were there, and
    named in ``plan.unseen`` (``argent plan`` costs a config on a machine without its data)."""
    groups = groups_section(workflow.raw)  # its errors name no file, as the DAG build prefixes its own
    hash_of = result_hash or (lambda gcfg, key: run_identity(gcfg, key, base_dir))
    plan = Plan(groups, {}, {})
    for group in groups.values():
        if not group.enabled:
            plan.left_out.append((group.name, f"groups.{group.name}.enabled is false"))
            continue
        # the merge of the group's overrides is of mappings (argent.config.groups); then typed, its errors unprefixed
        gcfg = WorkflowConfig(group_config(workflow.raw, group), "", base_dir)
        check_tuned_names(gcfg, group, base_dir)
        reason = _cannot_run(gcfg, group)
        absent = "" if reason else _absent_data(gcfg, group, base_dir)
        if absent and without_data and not group.optional:
            plan.unseen.append((group.name, absent))  # planned as if it were there: a cost needs no data
        else:
            reason = reason or absent
        if reason:
            if not group.optional:
                raise ConfigError(f"groups.{group.name}: {reason}; fix it, or mark the group `optional: true` "
                                  f"to run without it")
            plan.left_out.append((group.name, reason))
            continue
        plan.configs[group.name], plan.workflows[group.name] = gcfg.raw, gcfg
        check_group_runs(gcfg, group, base_dir)
        if any(tuned_base(gcfg.raw, v) for v in group.variants):
            check_trial_config(gcfg, base_dir)
    hashes: dict[RunKey, str] = {}
    for group in sorted(plan.active(), key=lambda g: _depth(groups, g)):  # a lender before its borrowers
        lender = groups.get(group.borrow_from) if group.borrow_from in plan.configs else None
        for key in group.run_keys():
            plan.home[key] = key
            if lender is None or tuned_base(workflow.raw, key.variant) or key.variant not in lender.variants:
                continue
            other = RunKey(lender.name, key.variant, key.size, key.seed)
            if other not in plan.home:
                continue
            for k in (key, other):
                if k not in hashes:
                    try:
                        hashes[k] = hash_of(plan.configs[k.group], k)
                    except ConfigError as err:
                        raise ConfigError(f"run {k}: {err}") from None
            if hashes[key] == hashes[other]:
                plan.home[key] = plan.home[other]
    return plan


def check_group_runs(gcfg: WorkflowConfig, group: Group, base_dir: Path) -> None:
    """Each variant and size the group trains resolved from its merged config (base + overrides), so a
    value out of range there stops the plan with the group named, not a job or the cost table."""
    try:
        gcfg.section("runs")  # typed now, so that its error names the group
    except ConfigError as err:
        raise ConfigError(f"groups.{group.name} (the base config with its overrides): {err}") from None
    for variant in dict.fromkeys(group.variants):
        for size in dict.fromkeys(group.sizes):
            key = RunKey(group.name, variant, size, group.seeds[0] if group.seeds else 0)
            try:
                run_experiment(gcfg.raw, key, base_dir)  # a run merges its layers from the mapping
            except ConfigError as err:
                raise ConfigError(f"groups.{group.name} (the base config with its overrides), run {variant}-{size}: "
                                  f"{err}") from None


def check_tuned_names(gcfg: WorkflowConfig, group: Group, base_dir: Path) -> None:
    """A listed ``X-tuned`` that is neither a variant of the catalogue nor the best of a study the config
    runs (X not in ``tune.base_variants``) is refused, in one line naming the group and the key to set."""
    listed = [v for v in dict.fromkeys(group.variants) if v.endswith(TUNED_SUFFIX) and not tuned_base(gcfg.raw, v)]
    catalogue = load_variants(_variants_file(gcfg, base_dir)) if listed else {}
    for variant in (v for v in listed if v not in catalogue):
        base = variant.removesuffix(TUNED_SUFFIX)
        raise ConfigError(f"groups.{group.name}: {variant} is the tuned {base}, but no study tunes {base} "
                          f"(tune.base_variants: {list(tune_studies(gcfg.raw).values())}); add {base} to "
                          f"tune.base_variants, or remove {variant} from groups.{group.name}.variants")


def trial_overrides(gcfg: WorkflowConfig) -> dict[str, Any]:
    """The tuning group's config with ``tune.train_overrides`` merged on top, in order; a malformed
    override is named by its index. A mapping: the overrides are merged over the config as written."""
    trial = gcfg.raw
    for i, text in enumerate(gcfg.tune_or_defaults.train_overrides or []):
        try:
            trial = deep_merge(trial, parse_override(text))
        except ConfigError as err:
            raise ConfigError(f"tune.train_overrides[{i}]: {err}") from None
    return trial


def check_trial_config(gcfg: WorkflowConfig, base_dir: Path) -> list[ExperimentConfig]:
    """The config a trial of each study trains: the tuning group's, ``tune.train_overrides`` on top,
    resolved for the study's base variant. Found wrong at DAG build (a key that does not exist, a value
    of the wrong type, a base not in the catalogue), not in a worker after the first trials ran."""
    trial = trial_overrides(gcfg)
    tune = gcfg.tune_or_defaults
    seed = tune.seed
    check_seed(seed, "tune.seed")
    out = []
    for study, base in tune_studies(gcfg.raw).items():
        try:
            out.append(experiment_from_dict(trial, base, str(tune.size), seed, base_dir=base_dir))
        except ConfigError as err:
            listed = ", ".join(tune.train_overrides or []) or "none"
            raise ConfigError(f"tune: a study trial's config is invalid ({err}); study {study}, base {base}; "
                              f"tune.train_overrides: {listed}") from None
    return out


def _depth(groups: dict[str, Group], group: Group) -> int:
    depth = 0
    while group.borrow_from:
        group, depth = groups[group.borrow_from], depth + 1
    return depth


def _cannot_run(gcfg: WorkflowConfig, group: Group) -> str:
    tuned = [v for v in dict.fromkeys(group.variants) if tuned_base(gcfg.raw, v)]
    if tuned and (not gcfg.tune_or_defaults.enabled or not gcfg.tune_or_defaults.train_best):
        return f"lists {', '.join(tuned)}, which the study trains, but tune.enabled/tune.train_best is off"
    return ""


def _absent_data(gcfg: WorkflowConfig, group: Group, base_dir: Path) -> str:
    needs = [v for v in group.variants if uses_negatives(gcfg, v, base_dir)]
    if needs and not negatives_available(gcfg, base_dir):
        zip_path = gcfg.negatives.wordnet_zip
        return (f"{', '.join(needs)} train on mined hard negatives, which need WordNet: "
                f"negatives.wordnet_zip {zip_path!r} not found")
    return ""


def left_out_lines(plan: Plan) -> list[str]:
    return [f"argent: group {name} left out: {why}" for name, why in plan.left_out]
