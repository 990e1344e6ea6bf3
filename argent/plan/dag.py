"""Every question the workflow's rules ask of the config, answered once per DAG build.

``build_dag(config, root)`` resolves the experiment groups (``argent.plan.groups``), the released
models, the benchmarks that run, the mining jobs and the probe's runs, and keeps the lines the build
prints (groups left out, the cost, optional data skipped). Its methods give each rule its inputs,
its ``hash`` param (the part of the config the job depends on: a change re-runs exactly the jobs it
affects) and the config files the verbs read. Torch-free and free of Snakemake: the Snakefile parses
it on every job; tests/unit/plan/test_dag.py checks each answer and message. ``workflow/rules/common.smk``
only adapts these methods to Snakemake's wildcards.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from argent.config import ConfigError, WorkflowConfig
from argent.config.groups import (
    RunKey,
    planned_runs_text,
    run_identity,
    tune_studies,
    tuned_base,
    tuned_variant_file,
)
from argent.io import file_sha256
from argent.models.pretrained.section import PretrainedEntry, available_entries
from argent.plan.cost_report import cost_line
from argent.plan.groups import Plan, build_plan, left_out_lines, uses_negatives
from argent.plan.inputs import content_mismatches, refuse_unusable, write_marker
from argent.plan.table_choice import choose_tables
from argent.plan.targets import (
    BenchmarkChoice,
    IdentityMismatch,
    benchmark_data_inputs,
    choose_benchmarks,
    identity_mismatches,
    mining_jobs,
    planned_hashes,
    probe_runs,
    refuse_carried_stamps,
    study_base,
    study_lines,
)
from argent.runs import SUMMARY, HiershapesFolder, Results, eval_dir, is_under, pretrained_eval_dir, run_dir
from argent.runs.identity import stable_hash
from argent.tablespec.claims import check_claims
from argent.tablespec.outputs import TABLES, TableChoice
from argent.tuning.validation import validation_benchmarks

__all__ = ["Dag", "build_dag", "file_digest", "stable_hash"]


def file_digest(path: str | None) -> str:
    """Content hash of an external input (empty for none): with the input ancient(), a copy with new
    timestamps and the same bytes (re-provisioned shared data) re-runs nothing; new bytes do."""
    return file_sha256(path)[:16] if path and Path(path).is_file() else ""


@dataclass
class Dag:
    """The resolved workflow: the plan and what each rule reads, writes and depends on. ``config``: the merged
    workflow config as written (what the config files and the rules' ``hash`` params hold, read only for them);
    ``workflow``: the same, its sections typed (what every other answer reads)."""

    config: dict[str, Any]
    workflow: WorkflowConfig
    root: Path
    plan: Plan
    pretrained: dict[str, PretrainedEntry]
    benchmarks: BenchmarkChoice
    mining: dict[str, str]  # {negatives parquet: the training shards it is mined from}
    probe: dict[str, RunKey]  # {probe result: the run it reads}
    tables: TableChoice = field(default_factory=lambda: TableChoice(TABLES))  # the tables the tables job writes
    notes: list[str] = field(default_factory=list)  # printed once per build
    # finished runs whose summary.json carries another identity hash than the plan's: retrained
    stale: dict[RunKey, IdentityMismatch] = field(default_factory=dict)
    # where the identity markers live: None, <results>/identity; a dry run's temporary folder (common.smk)
    markers: Path | None = None

    def setting(self, section: str, key: str | None = None) -> Any:
        """``<section>.<key>`` (or the top-level value ``<section>``) as configured, else its type's
        default, the only one (``argent.config.setting``): for the rules, which name a key by its path."""
        return self.workflow.setting(section, key)

    # ---- paths ----------------------------------------------------------------------------------

    def r(self, *parts: str) -> str:
        """A path under the results folder."""
        return str(Path(self.workflow.results).joinpath(*parts))

    @property
    def results(self) -> Results:
        return Results(Path(self.workflow.results))

    @property
    def hiershapes(self) -> str:
        return str(Path(self.workflow.hiershapes.out))

    @property
    def hiershapes_manifest(self) -> str:
        return str(HiershapesFolder(Path(self.hiershapes)).manifest)

    @property
    def effective_config(self) -> str:
        """The merged workflow config (config files + --config) every verb reads. It is not an input
        of any rule: each job carries the hash of the part it depends on instead."""
        return str(self.results.effective_config)

    def group_config(self, group: str) -> str:
        """A group's config file: the base with the group's overrides."""
        return str(self.results.group_config(group))

    def files(self) -> dict[str, str]:
        """{path: text} of the config files the verbs read: the effective config, each group's, the
        generator's parameters, the planned identity of each run (``planned_hashes``). Written when their text
        changes (common.smk)."""
        variants_file = str(self.root / self.workflow.variants_file)
        # the config files hold the mappings as written (each verb types them again)
        out = {self.effective_config: yaml.safe_dump({**self.config, "variants_file": variants_file}, sort_keys=True)}
        for name, gcfg in self.plan.configs.items():
            out[self.group_config(name)] = yaml.safe_dump({**gcfg, "variants_file": variants_file}, sort_keys=True)
        out[self.r("params", "hiershapes.yaml")] = yaml.safe_dump(self.workflow.hiershapes.params, sort_keys=True)
        # the planned identities, which argent evaluate of the workflow reads instead of building the plan
        out[str(self.results.planned_runs)] = planned_runs_text(planned_hashes(self.plan, self.root,
                                                                               Path(self.workflow.results)))
        return out

    # ---- training -------------------------------------------------------------------------------

    def run_dir(self, key: RunKey) -> str:
        return str(run_dir(Path(self.workflow.results), key.group, key.variant, key.size, key.seed))

    def summaries(self) -> list[str]:
        """Every trained run's summary.json (a borrowed run once, under the group that trains it)."""
        return [str(Path(self.run_dir(k)) / SUMMARY) for k in self.plan.trained]

    def run_hash(self, key: RunKey) -> str:
        """The run's identity (argent/runs/identity.py): changes iff the run's result can change."""
        try:
            return run_identity(self.plan.configs[key.group], key, self.root)
        except ConfigError as err:
            raise ConfigError(f"config for run {key}: {err}") from None

    def identity_marker(self, key: RunKey) -> str:
        """``<results>/identity/<group>/<variant>-<size>/seed<k>.txt`` (under ``markers`` when set): written
        at DAG build when the run's folder holds a finished run of another identity (``write_identity_markers``)."""
        root = self.markers or Path(self.r("identity"))
        return str(root / key.group / f"{key.variant}-{key.size}" / f"seed{key.seed}.txt")

    def identity_inputs(self, key: RunKey) -> list[str]:
        """The train job's extra input: the run's identity marker, once one was written. A folder whose
        summary carries another hash than the plan's (trained by hand with another config, variant or
        ``--name``: Snakemake has no record of it, so its ``hash`` param says nothing) gets a marker
        newer than that summary, and Snakemake re-runs the training for the newer input. The marker
        stays an input after the retraining (older than the new summary: nothing to do), so the job's
        set of inputs does not change again; a run that never had one has no extra input at all."""
        marker = self.identity_marker(key)
        return [marker] if key in self.stale or Path(marker).is_file() else []

    def write_identity_markers(self) -> list[str]:
        """Write (or refresh) the marker of every stale run, newer than its summary: the only files the
        identity check writes at DAG build; it never touches a run folder. Returns the markers."""
        return [write_marker(Path(self.identity_marker(key)), stale) for key, stale in self.stale.items()]

    def run_resource(self, group: str, key: str) -> Any:
        """``runs.<key>`` of the group's config (its overrides over the base), else its one default
        (``argent.config.group_entries.RunResources``)."""
        return getattr(self.plan.workflow(group).runs, key)

    def launcher(self, group: str) -> list[str]:
        """``argent`` on one process; ``torchrun`` (free rendezvous port) for several GPUs."""
        gpus = int(self.run_resource(group, "gpus"))
        if gpus > 1:
            return ["torchrun", "--standalone", "--nproc_per_node", str(gpus), "-m", "argent"]
        return ["argent"]

    def made_by_synth(self, path: str) -> bool:
        """Whether ``path`` lies under ``hiershapes.out`` (argent synth makes it; ``hiershapes2/`` does not)."""
        return bool(path) and is_under(path, self.hiershapes)

    def synth_inputs(self, path: str) -> list[str]:
        """The generated data's manifest when ``path`` (a file, folder or shard pattern) is the embedded benchmark's."""
        return [self.hiershapes_manifest] if self.made_by_synth(path) else []

    def tuned_inputs(self, group: str, variant: str) -> list[str]:
        """A tuned variant's study ``best.yaml`` (the train rule's ``best`` input, passed as ``--variant-file``);
        [] for every other variant."""
        best = tuned_variant_file(self.plan.configs[group], Path(self.workflow.results), variant)
        return [] if best is None else [str(best)]

    def training_inputs(self, group: str, variant: str) -> list[str]:
        """Files a training job needs built first (generated data, mined negatives)."""
        gcfg = self.plan.workflow(group)
        inputs = self.synth_inputs(gcfg.data.train_shards)
        if uses_negatives(gcfg, variant, self.root):
            inputs.append(gcfg.data.negatives)
        return inputs

    # ---- evaluation -----------------------------------------------------------------------------

    def benchmark_data_inputs(self, names: list[str] | None = None) -> list[str]:
        """Whatever this DAG makes that the benchmarks ``names`` (default: those that run) read."""
        return benchmark_data_inputs(self.workflow, self.benchmarks.run if names is None else names,
                                     self.hiershapes, self.hiershapes_manifest)

    def evaluation_inputs(self, key: RunKey) -> list[str]:
        """The run, and whatever this DAG makes that its benchmarks read."""
        run = str(Path(self.run_dir(key)) / SUMMARY)
        return sorted({run, *self.benchmark_data_inputs()})

    def pretrained_inputs(self, name: str) -> list[str]:
        return [self.pretrained[name].path, *self.benchmark_data_inputs()]

    def evaluation_hash(self) -> str:
        return stable_hash({b: self.config["benchmarks"][b] for b in self.benchmarks.run})

    def eval_targets(self) -> list[str]:
        results = Path(self.workflow.results)
        return [str(eval_dir(results, k.group, k.variant, k.size, k.seed) / f"{b}.json")
                for k in self.plan.trained for b in self.benchmarks.run]

    def pretrained_eval_targets(self) -> list[str]:
        results = Path(self.workflow.results)
        return [str(pretrained_eval_dir(results, name) / f"{b}.json") for name in self.pretrained
                for b in self.benchmarks.run]

    # ---- cleaning, tuning, tables ---------------------------------------------------------------

    def clean_source(self, dataset: str) -> str:
        return self.workflow.clean.datasets[dataset].csv

    def clean_inputs(self, dataset: str) -> str:
        """The embedded split is made by synth_hiershapes (its manifest marks it complete)."""
        source = self.clean_source(dataset)
        return self.hiershapes_manifest if self.made_by_synth(source) else source

    def clean_hash(self, dataset: str) -> str:
        """The clean: options that shape one data set's outputs (every key but the other data sets)."""
        written = self.workflow.written("clean")  # hashed as written
        options = {k: v for k, v in written.items() if k != "datasets"}  # a data set: a clean: section
        return stable_hash({**options, "dataset": written["datasets"][dataset]})

    def enabled(self, section: str) -> bool:
        """An optional stage (tune, probe) runs when its section says ``enabled: true``."""
        return bool(self.workflow.section(section).enabled)

    def tuning_group(self) -> str | None:
        """The first group that trains a tuned variant (its budget is every study's), or None."""
        return next((g.name for g in self.plan.active() if any(tuned_base(self.config, v) for v in g.variants)),
                    None)

    def studies(self) -> dict[str, str]:
        """{study: its base variant}: one study per base of ``tune.base_variants`` (``tune.study`` the first's)."""
        return tune_studies(self.config)

    def tune_config(self) -> str:
        """The config file a study worker reads (every study's): the tuning group's, else the base one."""
        group = self.tuning_group()
        return self.group_config(group) if group else self.effective_config

    def tune_objective_entries(self) -> dict[str, Any]:
        """The benchmarks entries the study's objective reads (validation splits)."""
        names = [term.benchmark for term in self.workflow.tune.objective or []]
        return {name: self.workflow.written("benchmarks").get(name) or {} for name in names}  # hashed as written

    def tune_inputs(self, study: str | None = None) -> list[str]:
        """What a worker of ``study`` (default: every study) reads that this DAG makes: training data (its
        base's negatives), and the validation benchmarks' generated data and cleaned split (PEP pairs and
        negative pool, as the test split gets them)."""
        group = self.tuning_group()
        gcfg = self.plan.workflow(group) if group else self.workflow
        inputs = set(self.synth_inputs(gcfg.data.train_shards))
        bases = [study_base(self.workflow.tune, study)] if study is not None else list(self.studies().values())
        if any(uses_negatives(gcfg, base, self.root) for base in bases):
            inputs.add(gcfg.data.negatives)
        inputs.update(self.benchmark_data_inputs(list(self.tune_objective_entries())))
        return sorted(inputs)

    def tune_hash(self, study: str) -> str:
        """A study's workers' ``hash`` param: the ``tune:`` section as that study reads it (its name and
        base; ``base_variants`` left out, so the first study's is the one-base section's), the objective's
        entries, the tuning group's overrides."""
        section = {k: v for k, v in self.workflow.written("tune").items() if k != "base_variants"}  # hashed as written
        section.update(study=study, base_variant=study_base(self.workflow.tune, study))
        group = self.tuning_group()
        return stable_hash([section, self.tune_objective_entries(), self.plan.groups[group].overrides if group else {}])

    def cleaned_datasets(self) -> list[str]:
        """The ``clean.datasets`` entries whose cleaned files a benchmark that runs, or the study, reads:
        the only ones cleaned (a data set nothing here evaluates costs its cleaning and gives nothing:
        config/quick.yaml never evaluates the real HierarCaps)."""
        read = set(self.benchmark_data_inputs()) | (set(self.tune_inputs()) if self.enabled("tune") else set())
        return [d for d in self.workflow.clean.datasets
                if {str(self.results.clean(d).clean_csv), str(self.results.clean(d).negative_pool)} & read]

    def table_extras(self) -> list[str]:
        """Outputs of the optional stages that the tables and the report include."""
        extras = list(self.probe)
        if extras:
            extras.append(str(self.results.probe_figure))
        if self.enabled("tune"):
            extras += [str(self.results.study_trials(study)) for study in self.studies()]
        extras += [str(self.results.clean(d).table1_md) for d in self.cleaned_datasets()]
        return extras

    def run_figures(self) -> bool:
        """Whether an evaluation draws the per-run figures (a benchmark of the analysis protocol runs):
        the tables job's ``figures/runs/`` is an output only then, never an empty folder."""
        return any(self.workflow.benchmark(b).protocol == "analysis" for b in self.benchmarks.run)

    def tables_hash(self) -> str:
        cfg = self.config  # hashed as written, but runs: typed with every key, defaults included
        runs = dataclasses.asdict(self.workflow.runs)
        return stable_hash([cfg.get("tables", {}), runs, cfg.get("groups"), self.workflow.tune.enabled,
                            sorted(map(str, self.plan.home.items()))])

    def claims_file(self) -> str:
        """The claims file the tables job reads (``tables.claims.file``, else its default)."""
        return self.workflow.tables.claims.file


def build_dag(config: dict[str, Any], root: Path) -> Dag:
    """Resolve the workflow once; a ``ConfigError`` names the key and what to do. ``config``: the merged mapping
    Snakemake holds, typed here once (``WorkflowConfig``); everything below reads the typed config."""
    workflow = WorkflowConfig(config, "config", root)
    workflow.check_all()  # every section, typed key by key (argent.config.SECTIONS; the schema only patterns)
    claims = check_claims(workflow, root)  # the claims file the tables job reads, parsed now (not after every training)
    if workflow.tune_or_defaults.enabled:  # each study's benchmarks and metrics, before any trial trains
        for study in workflow.tune.studies().values():
            validation_benchmarks(study, config, root)
    try:
        plan = build_plan(workflow, root)
    except ConfigError as err:
        raise ConfigError(f"experiment groups: {err}") from None
    refuse_unusable(workflow, plan, root)  # results: a file; data built as another dataset_hash (plan/inputs.py)
    notes = [*left_out_lines(plan), cost_line(workflow, plan, root), *study_lines(workflow.tune, plan)]
    entries, skipped = available_entries(workflow.pretrained, list(plan.groups))
    notes += skipped
    benchmarks = choose_benchmarks(workflow, root)
    notes += benchmarks.skipped.values()
    results = Path(workflow.results)
    stale = identity_mismatches(plan, root, results)  # reads the summaries, writes nothing
    refuse_carried_stamps(stale, results)
    stale.update(content_mismatches(plan, root, results, set(stale)))  # bytes read, changed
    notes += [m.line() for m in stale.values()]
    probe = probe_runs(workflow.probe, plan, results)
    tables = choose_tables(workflow.tables, plan, claims, bool(probe)) if claims else TableChoice(TABLES)
    notes += tables.lines()
    return Dag(config=config, workflow=workflow, root=root, plan=plan, pretrained={e.name: e for e in entries}, benchmarks=benchmarks,
               mining=mining_jobs(plan, root), probe=probe, tables=tables, notes=notes, stale=stale)
