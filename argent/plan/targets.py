"""What the workflow builds, decided from the config and the plan: which benchmarks run, what they
read that the DAG makes, which parquet of hard negatives is mined from which shards, which runs the
probe reads, and which finished run folders hold another run than the plan trains there (their
``summary.json`` carries another identity hash: ``identity_mismatches``; the DAG retrains them, the
tables and ``argent evaluate`` refuse them: ``planned_hash`` is the one home of the hash every reader
compares with). Pure functions, torch-free, tested with their messages (tests/unit/plan/test_targets.py,
tests/integration/faults/test_identity_reads.py); workflow/rules/common.smk only turns their answers into
Snakemake inputs and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from argent.config import CARRIED_VERSIONS, IDENTITY_VERSION, ConfigError, WorkflowConfig, check_name
from argent.config.groups import (
    TUNED_SUFFIX,
    RunKey,
    planned_identity,
    refuse_other_identity,
    tuned_study,
)
from argent.evaluation.benchmarks import CLEANED, CLEANED_SIDE, entry_paths, parse_benchmark
from argent.io import ReadError, read_json_object
from argent.plan.groups import Plan, uses_negatives
from argent.plan.preflight import benchmark_findings, missing_required, produced_prefixes
from argent.probe.config import ProbeSection
from argent.runs import SUMMARY, is_under, probe_result, run_dir
from argent.tuning.config import TuneConfig

__all__ = ["BenchmarkChoice", "IdentityMismatch", "benchmark_data_inputs", "choose_benchmarks",
           "check_stamp", "identity_mismatches", "mining_jobs", "planned_hash", "probe_runs", "stamped_hash"]


@dataclass(frozen=True)
class BenchmarkChoice:
    """``evaluate.benchmarks`` split into those that run and the optional ones whose data is absent
    (``skipped``, each with its one line to print)."""

    run: list[str]
    skipped: dict[str, str] = field(default_factory=dict)


def choose_benchmarks(workflow: WorkflowConfig, base_dir: Path) -> BenchmarkChoice:
    """A benchmark runs when its entry is valid (the protocol registry, argent/evaluation/benchmarks.py)
    and its data is made by this DAG or present on disk. Absent data is an error
    naming the key and path (a required benchmark, the default) or one skip line (``optional: true``).
    The entries are read as written: their paths as written are what the messages and the rules name."""
    names = [check_name(b, "evaluate.benchmarks") for b in workflow.evaluate.benchmarks or []]
    entries = workflow.written("benchmarks")
    unknown = [b for b in names if b not in entries]
    if unknown:
        raise ConfigError(f"evaluate.benchmarks: {unknown} not defined under benchmarks: (defined: {sorted(entries)})")
    for name, raw in entries.items():  # every entry (tuning reads some), before any job runs
        parse_benchmark(name, raw, base_dir)
    run, skipped = [], {}
    prefixes = produced_prefixes(workflow)
    for name in names:
        findings = benchmark_findings(name, entries[name], prefixes, base_dir)
        problem = missing_required(findings)
        if problem:
            raise ConfigError(f"required benchmark data missing:\n  {problem}")
        absent = [f for f in findings if f.status == "missing-optional"]
        if absent:
            skipped[name] = f"skipping optional benchmark {name}: {absent[0].key}: {absent[0].path} not found"
        else:
            run.append(name)
    return BenchmarkChoice(run, skipped)


def benchmark_data_inputs(workflow: WorkflowConfig, names: list[str], made_by_synth: str, manifest: str) -> list[str]:
    """Files this DAG makes that the benchmarks ``names`` read: the embedded benchmark's manifest
    (for a path under ``made_by_synth``) and cleaned CSVs / negative pools under the results folder (the
    entries' paths as written: the rules' inputs)."""
    results = str(Path(workflow.results))
    inputs = set()
    for name in names:
        entry = workflow.written("benchmarks").get(name) or {}  # an unknown name is choose_benchmarks' error
        if any(is_under(p, made_by_synth) for p in entry_paths(entry).values()):
            inputs.add(manifest)
        inputs.update(p for p in entry_paths(entry, (CLEANED, CLEANED_SIDE)).values() if is_under(p, results))
    return sorted(inputs)


def mining_jobs(plan: Plan, base_dir: Path) -> dict[str, str]:
    """{negatives parquet: training shards} over the groups whose variants train on hard negatives.
    One parquet is mined from one set of shards; two groups that disagree are an error."""
    jobs: dict[str, str] = {}
    for group in plan.active():
        gcfg = plan.workflow(group.name)
        if not any(uses_negatives(gcfg, v, base_dir) for v in group.variants):
            continue
        parquet, shards = gcfg.data.negatives, gcfg.data.train_shards
        if not parquet:
            raise ConfigError(f"groups.{group.name}: its variants train on hard negatives but data.negatives is empty")
        if jobs.get(parquet, shards) != shards:
            raise ConfigError(f"data.negatives {parquet}: mined from two different data.train_shards "
                              f"({jobs[parquet]} and {shards}); give each group its own data.negatives path")
        jobs[parquet] = shards
    return jobs


def probe_runs(probe: ProbeSection, plan: Plan, results: Path) -> dict[str, RunKey]:
    """{probe result path: the run it reads} for the typed ``probe:`` section (``variants`` name
    ``<group>/<variant>``, a bare name meaning main). A borrowed run is read, and its result written, under
    its lender."""
    if not probe.enabled:
        return {}
    out: dict[str, RunKey] = {}
    for name in probe.variants or []:
        group, _, variant = str(name).rpartition("/")
        group = group or "main"
        if group not in plan.configs:
            raise ConfigError(f"probe.variants: {name!r}: group {group!r} is not an active group; "
                              f"active: {sorted(plan.configs)}")
        seeds = probe.seeds
        if not seeds:
            raise ConfigError("probe.seeds: the seeds of the runs to probe are missing (e.g. [0])")
        for size in probe.sizes or plan.groups[group].sizes:
            for seed in seeds:
                key = RunKey(group, variant, size, int(seed))
                if key not in plan.home:
                    raise ConfigError(f"probe: {key} is not a run of group {group} (probe.variants/sizes/seeds)")
                home = plan.home[key]
                out[str(probe_result(results, home.group, variant, size, seed))] = home
    return out


def study_base(tune: TuneConfig, study: str) -> str:
    """The base variant ``study`` of the typed ``tune:`` section tunes; another name is a ``ConfigError`` naming
    the config's studies."""
    studies = tune.studies()
    if study not in studies:
        raise ConfigError(f"tune: no study {study!r} in this config (tune.study, tune.base_variants); "
                          f"its studies: {sorted(studies)}")
    return studies[study].base_variant


def study_lines(tune: TuneConfig, plan: Plan) -> list[str]:
    """One line per study the typed ``tune:`` section runs whose best no active group retrains (``<base>-tuned``):
    its trials cost what no cost line counts (the cost counts a study with the group that lists its variant)."""
    if not tune.enabled:
        return []
    listed = {v.removesuffix(TUNED_SUFFIX) for group in plan.active() for v in group.variants if v.endswith(TUNED_SUFFIX)}
    return [f"argent: study {name} tunes {study.base_variant} ({tune.n_trials} trials), but no active group "
            f"retrains {study.base_variant}{TUNED_SUFFIX}: its trials are in no cost line (list it in a group, or drop "
            f"{study.base_variant} from tune.base_variants)"
            for name, study in tune.studies().items() if study.base_variant not in listed]


# ---- run identity at every read ------------------------------------------------------------------


def planned_hash(plan: Plan, key: RunKey, base_dir: Path, results: Path) -> str | None:
    """The identity hash the workflow's train job stamps ``key``'s run with (``argent.config.groups.planned_identity``
    of its group's config; None for a tuned run before its study's ``best.yaml`` exists)."""
    return planned_identity(plan.configs[key.group], key, base_dir, results)


def planned_hashes(plan: Plan, base_dir: Path, results: Path) -> dict[RunKey, str | None]:
    """The identity hash each run the plan trains at home is stamped with (``planned_hash``; None for a tuned run
    whose study has not written its best.yaml, or wrote a malformed one: its train job reads it and names it)."""
    out: dict[RunKey, str | None] = {}
    for key in plan.trained:
        try:
            out[key] = planned_hash(plan, key, base_dir, results)
        except ConfigError:
            if tuned_study(plan.configs[key.group], key.variant) is None:
                raise
            out[key] = None
    return out


def stamped_hash(path: Path) -> str | None:
    """The ``config_hash`` a summary or evaluation JSON carries (None: it carries none)."""
    value = read_json_object(path).get("config_hash")
    return value if isinstance(value, str) and value else None


def stamped_version(path: Path) -> int | None:
    """The ``identity_version`` a summary records (None: none, as before run identity v1)."""
    value = read_json_object(path).get("identity_version")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def refuse_carried_stamps(stale: dict[RunKey, IdentityMismatch], results: Path) -> None:
    """Finished runs stamped under a carried identity version (argent/config/experiment.py CARRIED_VERSIONS; v1
    hashed paths) are not retrained because the encoding changed: the DAG stops once, with the command
    that carries them over (``argent restamp``, which refuses a run whose config did change)."""
    carried = [m for m in stale.values() if m.version is not None and m.version in CARRIED_VERSIONS]
    if carried:
        raise ConfigError(
            f"{len(carried)} finished run(s) in {results} carry a run identity v{carried[0].version} stamp "
            f"(e.g. {carried[0].folder}); v{IDENTITY_VERSION} hashes no paths, so every hash moved. Carry them over "
            f"without retraining: argent restamp --results {results} --config <this config>, then the "
            f"`snakemake --cleanup-metadata ...` line it prints; a run it refuses (its config did change) "
            f"you retrain by moving its folder out of {results}")


@dataclass(frozen=True)
class IdentityMismatch:
    """A finished run folder whose ``summary.json`` carries another hash than the plan trains there."""

    key: RunKey
    folder: str
    found: str       # the summary's config_hash ("none": it carries none; "unreadable")
    planned: str
    summary_mtime_ns: int  # the DAG's marker is made newer than this
    version: int | None = None  # the identity version the summary records (None: none)

    def line(self) -> str:
        return (f"argent: {self.folder}: its {SUMMARY} carries config hash {self.found}, the plan trains "
                f"{self.key} there with hash {self.planned} (trained with another config, variant or --name): "
                f"retrained (the new run is staged; its checkpoint and config stay until it finishes)")


def identity_mismatches(plan: Plan, base_dir: Path, results: Path) -> dict[RunKey, IdentityMismatch]:
    """The finished runs the plan trains whose ``summary.json`` carries another identity hash than the
    plan's (a folder trained by hand with another config, variant or ``--name``; a legacy stamp that
    ``argent restamp`` did not carry over). The DAG writes each one a marker newer than its summary, an
    input of its train job (``Dag.identity_inputs``), so that it is retrained whatever Snakemake's
    records say (a folder trained by hand has none). Reads the run folders only.
    A tuned run before its study's ``best.yaml`` exists is not compared."""
    out: dict[RunKey, IdentityMismatch] = {}
    for key in plan.trained:
        folder = run_dir(results, key.group, key.variant, key.size, key.seed)
        summary = folder / SUMMARY
        try:
            stat = summary.stat()
        except OSError:
            continue  # unfinished or absent: the train job runs anyway
        try:
            found, version = stamped_hash(summary) or "none", stamped_version(summary)
        except ReadError:
            found, version = "unreadable", None
        try:
            planned = planned_hash(plan, key, base_dir, results)
        except ConfigError:
            if tuned_study(plan.configs[key.group], key.variant) is None:
                raise
            planned = None  # a malformed best.yaml: left to the train job, which reads it and names it
        if planned is not None and found != planned:
            out[key] = IdentityMismatch(key, str(folder), found, planned, stat.st_mtime_ns, version)
    return out


def check_stamp(path: Path, found: str | None, plan: Plan, key: RunKey, base_dir: Path, results: Path,
                   planned: dict[RunKey, str | None]) -> None:
    """Refuse a summary or evaluation JSON at ``path`` that carries another hash than the run ``key``
    the plan trains (``planned`` caches ``planned_hash``). A file without a hash is not compared."""
    if found is None:  # none recorded (a file not written by argent): nothing to compare
        return
    if key not in planned:
        planned[key] = planned_hash(plan, key, base_dir, results)
    refuse_other_identity(path, found, key, planned[key], results)
