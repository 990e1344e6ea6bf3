"""Cost before launch: per experiment group, the runs it trains, their steps and devices, and the
estimated GPU-hours (CPU core-hours for CPU configs), from a step time per model size.

A size's step time comes from, in this order (docs/scaling.md):
1. ``cost.step_seconds.<size>`` in the workflow config (seconds per step at ``cost.batch_size``,
   default the group's own batch), labelled "config";
2. the measured record ``cost.step_times`` (default ``<results>/bench/step_times.json``, written by
   ``argent plan --record-from RESULTS`` from finished training jobs), labelled with the machine
   and device it was measured on;
3. the results folder's own finished training jobs, measured the same way at each plan (so a finished
   training prices the next ``snakemake -n`` and ``argent plan``), labelled "measured from";
otherwise the size is reported as unknown and left out of the total, never guessed.
A step time measured at another batch size is scaled linearly and says so.

For an unknown size of a GPU config (``train.device`` cuda) the plan also prints the FLOP-model
estimate (argent/models/flops.py): training FLOPs per step of each run ÷ (GPUs per run ×
``cost.estimate_mfu`` × ``cost.gpu_peak_tflops``), labelled "estimate, not measured" in a table of
its own, on the group's line and as a total of its own, never added to the measured total, each time
with the MFU it assumes and where that comes from (published until ``bench/gpu_check.py`` measures
one on a GPU and it is set: ``PUBLISHED_MFU``). A CPU
config gets no estimate: the FLOP model leaves out the convolutional stem of the CPU models (a third
of their step) and a CPU's sustained peak depends on its threads; measure it (``--record-from``).

Here: the ``cost:`` section, each size's step time, the FLOP-model estimate, the cost of each group.
The measured record (its reader and ``--record-from``'s writer) is argent/plan/step_record.py; the
printed table and one-line total are argent/plan/cost_report.py, which reads this module (never the reverse).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import ConfigError, WorkflowConfig, check_range, deep_merge, from_dict
from argent.config.groups import RunKey, run_experiment, tuned_base
from argent.models.flops import step_flops, step_seconds
from argent.plan.groups import Plan, trial_overrides
from argent.plan.step_record import RECORD, StepRecord, live_record, nearby_record, read_record

# The MFU the estimate assumes until bench/gpu_check.py has measured this repository's step on a GPU
# (then set cost.estimate_mfu): a published one. open_clip's ViT-B/16 on LAION-400M took 10,700
# A100-40GB hours for its 32 epochs (laion400m_e32, ≈ 12.8 B samples; open_clip docs/PRETRAINED.md);
# at this FLOP model's 122.6 GFLOP per training sample that is 13 % of the A100's 312 TFLOP/s bf16
# peak (its B/32: 11 %, L/14: 12 %; docs/scaling.md §4). Our S and B towers are that size, at patch 16.
PUBLISHED_MFU = 0.13
PUBLISHED_MFU_SOURCE = "published: open_clip ViT-B/16 on A100, docs/scaling.md §4"


@dataclass(frozen=True)
class CostSection:
    """The ``cost:`` section of the workflow config (``argent.config.SECTIONS``); these are its keys'
    only defaults (the Snakemake schema keeps the pattern of ``step_times``, a path)."""

    step_seconds: dict[str, float] = field(default_factory=dict)  # size -> s per step of one run, all its GPUs
    batch_size: int | None = None      # the batch those step_seconds were taken at; None: the group's batch
    step_times: str = ""               # the measured record; "" = <results>/bench/step_times.json
    note: str = ""                     # where step_seconds were measured: printed as their source
    # The FLOP-model estimate beside an unknown size of a GPU config: model-FLOPs utilisation (a
    # fraction; the default is published, PUBLISHED_MFU) and one GPU's dense peak in TFLOP/s at the
    # training precision (A100 bf16: 312).
    estimate_mfu: float = PUBLISHED_MFU
    gpu_peak_tflops: float = 312.0

    def __post_init__(self) -> None:
        for size, seconds in self.step_seconds.items():
            check_range(f"step_seconds.{size}", seconds, low=0.0, low_open=True)
        if self.batch_size is not None:
            check_range("batch_size", self.batch_size, low=1)
        check_range("estimate_mfu", self.estimate_mfu, low=0.0, low_open=True, high=1.0)
        check_range("gpu_peak_tflops", self.gpu_peak_tflops, low=0.0, low_open=True)


def mfu_source(workflow: WorkflowConfig) -> str:
    """Where the estimate's MFU comes from: the config's ``cost.estimate_mfu``, else the published default.
    Read as written: the typed section cannot tell a value set to the default from one left unset."""
    return "config cost.estimate_mfu" if workflow.written("cost").get("estimate_mfu") is not None \
        else PUBLISHED_MFU_SOURCE


def cost_section(raw: dict[str, Any], base_dir: Path | None = None) -> CostSection:
    """The typed ``cost:`` section of the workflow config mapping ``raw`` (an unset key, or one set to null,
    takes its default); a typo or a bad value is a ``ConfigError`` naming ``cost.<key>``. The parser
    ``SECTIONS`` names for ``cost`` (``WorkflowConfig.cost`` calls it)."""
    section = raw.get("cost") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"cost: expected a mapping, got {section!r}")
    return from_dict(CostSection, {k: v for k, v in section.items() if v is not None}, "cost")


@dataclass(frozen=True)
class StepTime:
    seconds: float | None
    source: str


@dataclass(frozen=True)
class Estimate:
    """The FLOP-model estimate for one size of a group whose step time is not measured.
    ``seconds``: variant -> estimated seconds per step of one run (all its GPUs together);
    ``runs``: variant -> runs of this size the group trains; ``tflop``: variant -> TFLOP per step;
    ``mfu``, ``peak_tflops``, ``gpus``: what the FLOPs were divided by (cost.estimate_mfu,
    cost.gpu_peak_tflops, GPUs per run); ``mfu_source``: where that MFU comes from (``mfu_source``)."""

    seconds: dict[str, float]
    runs: dict[str, int]
    tflop: dict[str, float]
    mfu: float
    peak_tflops: float
    gpus: int
    mfu_source: str = PUBLISHED_MFU_SOURCE

    @property
    def mfu_text(self) -> str:
        return f"{self.mfu * 100:g} % MFU"

    def label(self) -> str:
        """What a printed estimate assumes and where that comes from: "13 % MFU (published: ...)"."""
        return f"{self.mfu_text} ({self.mfu_source})"

    def run_seconds(self) -> float:
        """Σ over the trained runs of their estimated seconds per step (× steps = the runs' seconds)."""
        return sum(n * self.seconds[v] for v, n in self.runs.items())


@dataclass
class GroupCost:
    group: str
    runs: int                       # trained by this group
    borrowed: int                   # listed, trained by another group (same config hash)
    device: str
    gpus: int
    threads: int
    steps: dict[str, int]           # size -> steps per run
    batch: dict[str, int]           # size -> batch size
    runs_by_size: dict[str, int]
    step_time: dict[str, StepTime]  # size -> step time
    study_steps: int = 0            # tuning trials, on the smallest size of the group
    study_variants: tuple[str, ...] = ()  # the tuned variants whose studies (equal budgets) study_steps counts
    notes: list[str] = field(default_factory=list)
    estimate: dict[str, Estimate] = field(default_factory=dict)  # size -> FLOP-model estimate (unknown sizes, GPU)

    @property
    def unit(self) -> str:
        return "GPU-h" if self.gpus > 0 else "CPU-core-h"

    def _run_seconds(self, size: str, estimated: bool) -> float | None:
        """Seconds per step summed over the size's trained runs: measured, else (``estimated``) the estimate."""
        st = self.step_time[size]
        if st.seconds is not None:
            return self.runs_by_size[size] * st.seconds
        est = self.estimate.get(size) if estimated else None
        return None if est is None else est.run_seconds()

    def hours(self, estimated: bool = False) -> float | None:
        """Device hours of the group's training (and study); None when a size's step time is unknown.
        ``estimated``: a size without a step time takes its FLOP-model estimate (None where it has none)."""
        total = 0.0
        for size in self.runs_by_size:
            seconds = self._run_seconds(size, estimated)
            if seconds is None:
                return None
            total += self.steps[size] * seconds
        if self.study_steps:
            size = min(self.runs_by_size, key=lambda s: self.steps[s]) if self.runs_by_size else None
            if size is None:
                return None
            seconds = self.step_time[size].seconds
            if seconds is None and estimated and size in self.estimate:
                tuned = [self.estimate[size].seconds.get(v) for v in self.study_variants]
                seconds = None if None in tuned else sum(tuned) / len(tuned)  # the studies share study_steps equally
            if seconds is None:
                return None
            total += self.study_steps * seconds
        return total * max(self.gpus if self.gpus > 0 else self.threads, 1) / 3600

    def estimated_hours(self) -> float | None:
        """The group's hours with the FLOP-model estimate where no step time is known; None when the
        group is measured throughout (``hours()`` says it) or a size has neither."""
        return None if self.hours() is not None else self.hours(estimated=True)


@dataclass(frozen=True)
class Records:
    """Where measured step times come from: the record file (``cost.step_times``) and the results folder's
    own finished jobs (``live``, measured once per plan)."""

    path: Path
    record: StepRecord
    results: Path
    live: StepRecord
    base_dir: Path


def records(cost: CostSection, results: Path, base_dir: Path) -> Records:
    """The measured record the typed ``cost:`` section names (``step_times``, default
    ``<results>/bench/step_times.json``), its path, and the step times of the results folder's finished training
    jobs."""
    path = Path(cost.step_times or Path(results) / RECORD)
    path = path if path.is_absolute() else base_dir / path
    results = results if results.is_absolute() else base_dir / results
    return Records(path, read_record(path), results, live_record(results), base_dir)


def _measured(entry: Any, device: str) -> bool:
    return bool(entry) and entry.device.split(":")[0] == device.split(":")[0]


def step_time(cost: CostSection, size: str, batch: int, device: str, sources: Records) -> StepTime:
    """One size's step time at ``batch`` on ``device`` (module doc: the config's, the record's, the results
    folder's finished jobs', else unknown), with where it comes from."""
    configured = cost.step_seconds.get(size)
    if configured is not None:
        ref = int(cost.batch_size or batch)
        note = f" scaled from batch {ref}" if ref != batch else ""
        measured = f" ({cost.note})" if cost.note else ""
        return StepTime(float(configured) * batch / ref, f"config cost.step_seconds{measured}{note}")
    path = sources.path
    entry = sources.record.sizes.get(size)
    if _measured(entry, device):
        ref = entry.batch_size
        note = f", scaled from batch {ref}" if ref != batch else ""
        return StepTime(entry.step_seconds * batch / ref, f"measured on {sources.record.machine} ({entry.device}){note}: {path}")
    entry = sources.live.sizes.get(size)
    if _measured(entry, device):
        ref = entry.batch_size
        note = f", scaled from batch {ref}" if ref != batch else ""
        return StepTime(entry.step_seconds * batch / ref, f"measured from {entry.jobs} finished training job(s) "
                                                          f"({entry.device}){note}: {sources.results}")
    return StepTime(None, f"unknown: set cost.step_seconds.{size}, or let one run of size {size} finish here (the next plan reads it)"
                          f"{nearby_record(sources.results, sources.base_dir, path, size, device)}")


def flop_estimate(gcfg: WorkflowConfig, keys: list[RunKey], trained: set[RunKey], gpus: int, cost: CostSection,
                  base_dir: Path, source: str = PUBLISHED_MFU_SOURCE) -> Estimate:
    """The FLOP-model estimate for the runs ``keys`` (one group, one size): per variant, the FLOPs of
    one step at the run's own batch (its resolved config: model, variant, train) over ``gpus`` GPUs
    at ``cost.estimate_mfu`` of ``cost.gpu_peak_tflops``."""
    seconds: dict[str, float] = {}
    tflop: dict[str, float] = {}
    runs: dict[str, int] = {}
    for key in keys:
        if key.variant not in seconds:
            exp = run_experiment(gcfg.raw, key, base_dir)  # a run merges its layers from the mapping
            flops = step_flops(exp.model, exp.variant).per_step(exp.train.batch_size)
            tflop[key.variant] = flops / 1e12
            seconds[key.variant] = step_seconds(flops, cost.estimate_mfu, cost.gpu_peak_tflops, gpus)
        runs[key.variant] = runs.get(key.variant, 0) + (key in trained)
    return Estimate(seconds, runs, tflop, cost.estimate_mfu, cost.gpu_peak_tflops, max(gpus, 1), source)


def group_costs(workflow: WorkflowConfig, plan: Plan, base_dir: Path = Path(".")) -> list[GroupCost]:
    cost = workflow.cost
    sources = records(cost, Path(workflow.results), base_dir)
    out = []
    for group in plan.active():
        gcfg = plan.workflow(group.name)
        keys = group.run_keys()
        trained = [k for k in keys if plan.home[k] == k]
        device = str(gcfg.train.device)
        gc = GroupCost(group.name, len(trained), len(keys) - len(trained), device, int(gcfg.runs.gpus),
                       int(gcfg.runs.threads_per_run), {}, {}, {}, {})
        for size in group.sizes:
            # the size's train layers as written (train_by_size is partial), as the table has always read them
            train = deep_merge(gcfg.written("train"), (gcfg.raw.get("train_by_size") or {}).get(size) or {})
            gc.steps[size] = int(train.get("steps", 0))
            gc.batch[size] = int(train.get("batch_size", 0))
            gc.runs_by_size[size] = sum(1 for k in trained if k.size == size)
            gc.step_time[size] = step_time(cost, size, gc.batch[size], device, sources)
            if gc.step_time[size].seconds is None and device.split(":")[0] == "cuda":
                gc.estimate[size] = flop_estimate(gcfg, [k for k in keys if k.size == size], set(trained), gc.gpus,
                                                  cost, base_dir, mfu_source(workflow))
        tuned = tuple(v for v in dict.fromkeys(group.variants) if tuned_base(gcfg.raw, v))
        if tuned:  # one study per tuned variant
            n_trials = int(gcfg.tune_or_defaults.n_trials)
            trial = trial_overrides(gcfg)
            gc.study_steps = len(tuned) * n_trials * int((trial.get("train") or {}).get("steps", 0))
            gc.study_variants = tuned
            studies = "study: " if len(tuned) == 1 else f"studies: {len(tuned)} × "
            gc.notes.append(f"{studies}{n_trials} trials × {(trial.get('train') or {}).get('steps')} steps")
        out.append(gc)
    return out


def train_job_seconds(workflow: WorkflowConfig, plan: Plan, base_dir: Path = Path(".")) -> float | None:
    """The mean device seconds (core seconds on CPUs) of one training job of the plan, from the measured step
    times (sizes without one left out); None when none is measured. The progress lines' price of a training
    with no job record yet (argent/plan/progress.py)."""
    total, runs = 0.0, 0
    for gc in group_costs(workflow, plan, base_dir):
        for size, n in gc.runs_by_size.items():
            seconds = gc.step_time[size].seconds
            if seconds is not None and n:
                total += n * gc.steps[size] * seconds * max(gc.gpus if gc.gpus > 0 else gc.threads, 1)
                runs += n
    return total / runs if runs else None

