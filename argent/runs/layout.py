"""The results layout: the one place that knows where every output of a workflow lives.

A workflow's results folder (``results:`` of the config) holds::

    <results>/
      runs/<group>/<variant>-<size>/seed<k>/   one training run (RunFolder; read by argent.runs)
      eval/<group>/<variant>-<size>/seed<k>/   its evaluation JSON, one file per benchmark
      eval/pretrained/<family>-<size>/seed0/   a released model's, read like a run's
      benchmarks/<stage>/[<group>/]<job>.tsv   Snakemake's job records (argent/runs/job_records.py)
      tables/ figures/ probe/ tune/<study>/ data/ logs/ mlflow.db preflight.json

``<group>`` is an experiment group of the workflow config (argent/config/groups.py). A run folder holds:

- ``config.yaml``: the fully resolved ``ExperimentConfig``;
- ``metrics.jsonl``: every logged number, one JSON record per line;
- ``checkpoint.pt``: model, optimiser, scheduler, step, RNG states and the config hash (atomic);
- ``provenance.json``: what the run ran on, outside its identity;
- ``summary.json``: written last; its presence means the run finished;
- ``.staging/``: a re-run of a folder that holds a run, until it has finished (docs/reliability.md);
- ``.writer.lock``: the one writer's lock (argent.runs.hold_writer): its pid, host and start time while held;
- ``.replacing/`` then ``.replaced/``: the earlier run's files while a finished staged run is promoted.

Derived paths. The workflow config spells ``results:`` and ``hiershapes.out``; every path of a file
the workflow writes is derived from them here (argent/config/derived_paths.py fills them into the config):

    <results>/data/<dataset>/hierarcaps_clean.csv, negative_pool.csv   argent clean (CleanFolder)
    <results>/data/negatives/<name>.parquet                             argent mine (Results.negatives)
    <results>/data/image_cache/<name>/                                  the decoded-image cache
    <hiershapes.out>/train/shard-*.tar, classification[_val]/, ...     argent synth (argent/runs/embedded.py)

``is_under`` is the one answer to "does this path lie in that folder" (Path parts, never a string prefix).

Paths only: no torch, so that the Snakefile, which imports this on every job, parses in a moment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
SIZE_RE = re.compile(r"^[A-Za-z0-9]+$")
"""Names that become path components (variants, benchmarks, studies): no '/', nothing that
escapes ``results/``. Sizes have no '-' so that the run folder ``<variant>-<size>`` splits
(argent.config.experiment ``check_name`` refuses any other name)."""

RUNS_DIR = "runs"  # <results>/runs/<group>/<variant>-<size>/seed<k>
EVAL_DIR = "eval"  # <results>/eval/<group>/<variant>-<size>/seed<k>/<benchmark>.json
CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
CHECKPOINT = "checkpoint.pt"
SUMMARY = "summary.json"
PROVENANCE = "provenance.json"
CURVES = "curves.png"
STAGING = ".staging"
WRITER_LOCK = ".writer.lock"  # held (flock) by the one process writing the folder (argent.runs.hold_writer)
REPLACING = ".replacing"  # the earlier run's files, being moved aside by a promotion
REPLACED = ".replaced"  # the earlier run's files, all aside: the staged run's files move in next
MLFLOW_RECORD = "mlflow_run.json"  # which MLflow run mirrors the folder (argent/tracking/)
STUDY_BEST = "best.yaml"  # tune/<study>/: the best trial's variant fields (trains as argent-tuned)
STUDY_TRIALS = "trials.csv"  # tune/<study>/: every trial
STUDY_SUMMARY = "summary.json"  # tune/<study>/: the study's outcome (argent/tuning/export.py)
EFFECTIVE_CONFIG = "workflow_config.yaml"  # the merged workflow config every verb of a workflow reads
WORKFLOW_LOCK = ".workflow.lock"  # held by the one Snakemake that runs the results folder (runs/workflow_lock.py)
GROUPS_DIR = "groups"  # <results>/groups/<group>.yaml: each group's config; planned_runs.json beside them
PLANNED_RUNS = "planned_runs.json"  # the identity hash the DAG build plans for each run it trains at home
DEFAULT_RESULTS = "results"  # ``results:`` when the config leaves it out (the schema's default)
NEGATIVES_DIR = "negatives"  # <results>/data/negatives/<name>.parquet
IMAGE_CACHE_DIR = "image_cache"  # <results>/data/image_cache/<name>/
STEP_TIMES = "bench/step_times.json"  # <results>/bench/step_times.json: seconds per step per size (argent plan)
IMAGE_CACHE_MARKER = "cache.json"  # <results>/data/image_cache/<name>/cache.json: the cache is complete (written last)
RESERVED_DATA_NAMES = (NEGATIVES_DIR, IMAGE_CACHE_DIR)  # <results>/data/<name> that no cleaned data set may take


def is_under(path: str | Path, folder: str | Path, base: str | Path | None = None) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it. Both are taken from ``base`` (default: the
    working folder) when relative and normalised by their parts (``a/./b``, ``a/../b``) without
    touching the disk, so the answer is the same before the workflow has made either. Whole names
    only: ``results2/x`` is not under ``results``. Glob and brace patterns are plain names here."""
    root = Path(base) if base is not None else Path.cwd()
    return Path(os.path.normpath(root / path)).is_relative_to(os.path.normpath(root / folder))


@dataclass(frozen=True)
class RunFolder:
    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def metrics(self) -> Path:
        return self.root / METRICS

    @property
    def checkpoint(self) -> Path:
        return self.root / CHECKPOINT

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def curves(self) -> Path:
        return self.root / CURVES

    @property
    def provenance(self) -> Path:
        return self.root / PROVENANCE

    @property
    def staging(self) -> RunFolder:
        return RunFolder(self.root / STAGING)

    @property
    def writer_lock(self) -> Path:
        return self.root / WRITER_LOCK

    @property
    def replacing(self) -> RunFolder:
        return RunFolder(self.root / REPLACING)

    @property
    def replaced(self) -> RunFolder:
        return RunFolder(self.root / REPLACED)

    def stored_config(self) -> dict[str, Any]:
        """``config.yaml`` as stored (no defaults filled in); {} when absent or unreadable. The typed
        reader is ``argent.runs.read_run_config``."""
        try:
            data = yaml.safe_load(self.config.read_text())
        except (OSError, yaml.YAMLError):
            return {}
        return data if isinstance(data, dict) else {}

    def stale_temp_files(self) -> list[Path]:
        """Temp files ``argent.io.atomic_output`` leaves when its writer is killed mid-write."""
        names = (CONFIG, METRICS, CHECKPOINT, SUMMARY, CURVES, PROVENANCE)
        return sorted(p for name in names for p in self.root.glob(f".{Path(name).stem}.*{Path(name).suffix}")
                      if p.is_file())

    def results_root(self) -> Path:
        """The results folder above ``runs/``; a folder outside that layout is its own root."""
        parents = self.root.resolve().parents  # <results>/runs/<group>/<variant>-<size>/seed<k>
        return parents[3] if len(parents) > 3 and parents[2].name == RUNS_DIR else self.root.resolve()


def run_name(variant: str, size: str) -> str:
    return f"{variant}-{size}"


def split_run(name: str) -> tuple[str, str]:
    """``<variant>-<size>`` -> (variant, size); sizes contain no '-' (``SIZE_RE``)."""
    variant, _, size = name.rpartition("-")
    return variant, size


def run_dir(results: str | Path, group: str, variant: str, size: str, seed: int | str) -> Path:
    return Path(results) / RUNS_DIR / group / run_name(variant, size) / f"seed{seed}"


def eval_dir(results: str | Path, group: str, variant: str, size: str, seed: int | str) -> Path:
    """Where the workflow writes a run's evaluation JSON (one file per benchmark)."""
    return Path(results) / EVAL_DIR / group / run_name(variant, size) / f"seed{seed}"


def probe_result(results: str | Path, group: str, variant: str, size: str, seed: int | str) -> Path:
    """Where the probe writes one run's result: ``<results>/probe/<group>/<variant>-<size>/seed<k>.json``."""
    return Results(Path(results)).probe / group / run_name(variant, size) / f"seed{seed}.json"


PRETRAINED_GROUP = "pretrained"  # eval/pretrained/<family>-<size>/seed0: a released model, read like a run


def pretrained_eval_dir(results: str | Path, name: str) -> Path:
    """Where a released model's evaluation JSON goes: ``<results>/eval/pretrained/<name>/seed0``.

    ``name`` is ``<family>-<size>`` (``hycoclip-S``, ``openclip_laion2b-B32``) so that the tables read
    the folder as they read a run's (group ``pretrained``, one "seed": the released weights)."""
    variant, size = split_run(name)
    if not NAME_RE.match(variant) or not SIZE_RE.match(size):
        raise ValueError(f"released-model name {name!r}: expected <family>-<size> (a variant name and a size of "
                         f"letters and digits), e.g. hycoclip-S or meru-L")
    return eval_dir(results, PRETRAINED_GROUP, variant, size, 0)


def run_parts(seed_folder: Path) -> tuple[str, str, str, int]:
    """``.../<group>/<variant>-<size>/seed<k>`` -> (group, variant, size, k)."""
    seed_folder = Path(seed_folder)
    try:
        seed = int(seed_folder.name.removeprefix("seed"))
    except ValueError:
        raise ValueError(f"{seed_folder}: expected a folder named seed<k>") from None
    variant, size = split_run(seed_folder.parent.name)
    return seed_folder.parent.parent.name, variant, size, seed


def results_tracking_uri(results: str | Path) -> str:
    """The default MLflow store: SQLite in the results folder (four slashes: an absolute path)."""
    return f"sqlite:///{(Path(results) / 'mlflow.db').resolve()}"


def default_tracking_uri(run_dir: str | Path) -> str:
    """The default MLflow store of a run folder: the one of its results folder."""
    return results_tracking_uri(RunFolder(Path(run_dir)).results_root())


def eval_dir_of(run_dir: str | Path) -> Path:
    """Where the workflow writes a run's evaluation JSON: ``<results>/eval/<group>/<variant>-<size>/seed<k>``."""
    run_dir = Path(run_dir).resolve()
    return RunFolder(run_dir).results_root() / EVAL_DIR / run_dir.parent.parent.name / run_dir.parent.name / run_dir.name


@dataclass(frozen=True)
class CleanFolder:
    """``argent clean``'s output folder: ``<results>/data/<dataset>/`` in the workflow."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def clean_csv(self) -> Path:
        """The unambiguous samples, HierarCaps format (a PEP benchmark's ``clean_csv``)."""
        return self.root / "hierarcaps_clean.csv"

    @property
    def scores(self) -> Path:
        return self.root / "clean_scores.csv"

    @property
    def degrees(self) -> Path:
        return self.root / "caption_degrees.csv"

    @property
    def negative_pool(self) -> Path:
        """The rarely retrieved captions (a PEP benchmark's ``negative_pool``)."""
        return self.root / "negative_pool.csv"

    @property
    def table1_csv(self) -> Path:
        return self.root / "table1.csv"

    @property
    def table1_md(self) -> Path:
        return self.root / "table1.md"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"


@dataclass(frozen=True)
class Results:
    """The top-level folders of a results folder (the layout in this module's docstring)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def runs(self) -> Path:
        return self.root / RUNS_DIR

    @property
    def eval(self) -> Path:
        return self.root / EVAL_DIR

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def probe(self) -> Path:
        return self.root / "probe"

    @property
    def training_curves(self) -> Path:
        """Every run's training curves, one figure (argent tables)."""
        return self.figures / "training_curves.png"

    @property
    def probe_figure(self) -> Path:
        """The probe's exposure curves, one figure (argent probe --figure)."""
        return self.figures / "probe_exposure.png"

    @property
    def step_times(self) -> Path:
        """The measured step-time record ``argent plan --record-from`` writes (argent/plan/step_record.py)."""
        return self.root / STEP_TIMES

    @property
    def job_records(self) -> Path:
        """Snakemake's per-job records (``benchmark:`` of every rule; argent/runs/job_records.py): the folder
        keeps Snakemake's word, ``benchmarks``."""
        return self.root / "benchmarks"

    def tune(self, study: str) -> Path:
        return self.root / "tune" / study

    def clean(self, dataset: str) -> CleanFolder:
        return CleanFolder(self.root / "data" / dataset)

    def negatives(self, name: str) -> Path:
        """A parquet of mined hard negatives (``data.negatives: <name>``; argent mine writes it)."""
        return self.root / "data" / NEGATIVES_DIR / f"{name}.parquet"

    def image_cache(self, name: str) -> Path:
        """A decoded-image cache folder (``data.image_cache: <name>``; the image_cache rule builds it)."""
        return self.root / "data" / IMAGE_CACHE_DIR / name

    def study_best(self, study: str) -> Path:
        return self.tune(study) / STUDY_BEST

    def study_trials(self, study: str) -> Path:
        return self.tune(study) / STUDY_TRIALS

    @property
    def preflight(self) -> Path:
        """``argent check``'s findings: the DAG's first job's output."""
        return self.root / "preflight.json"

    @property
    def workflow_lock(self) -> Path:
        """The lock the one Snakemake that runs this results folder holds (argent/runs/workflow_lock.py)."""
        return self.root / WORKFLOW_LOCK

    @property
    def effective_config(self) -> Path:
        """The merged workflow config (config files + --config) the workflow's verbs read."""
        return self.root / EFFECTIVE_CONFIG

    def group_config(self, group: str) -> Path:
        """An experiment group's config: the base with the group's overrides."""
        return self.root / GROUPS_DIR / f"{group}.yaml"

    @property
    def planned_runs(self) -> Path:
        """The identity hash of each run the DAG build plans to train at home (written beside the group configs
        with the effective config, by the same build; ``argent evaluate`` reads it: argent/config/groups.py)."""
        return self.root / GROUPS_DIR / PLANNED_RUNS
