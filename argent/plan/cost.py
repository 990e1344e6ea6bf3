"""Cost before launch: per experiment group, the runs it trains, their steps and devices, and the
estimated GPU-hours (CPU core-hours for CPU configs), from a step time per model size.

A size's step time comes from, in this order (docs/scaling.md):
1. ``cost.step_seconds.<size>`` in the workflow config (seconds per step at ``cost.batch_size``,
   default the group's own batch), labelled "config";
2. the measured record ``cost.step_times`` (default ``<results>/bench/step_times.json``, written by
   ``argent plan --record-from RESULTS`` from finished training jobs), labelled with the machine
   and device it was measured on;
otherwise the size is reported as unknown and left out of the total, never guessed.
A step time measured at another batch size is scaled linearly and says so.

For an unknown size of a GPU config (``train.device`` cuda) the plan also prints the FLOP-model
estimate (argent/plan/flops.py): training FLOPs per step of each run ÷ (GPUs per run ×
``cost.estimate_mfu`` × ``cost.gpu_peak_tflops``), labelled "estimate, not measured" in a table of
its own, on the group's line and as a total of its own, never added to the measured total, each time
with the MFU it assumes and where that comes from (published until ``bench/gpu_check.py`` measures
one on a GPU and it is set: ``PUBLISHED_MFU``). A CPU
config gets no estimate: the FLOP model leaves out the convolutional stem of the CPU models (a third
of their step) and a CPU's sustained peak depends on its threads; measure it (``--record-from``).
"""

from __future__ import annotations

import json
import platform
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.config import ConfigError, deep_merge
from argent.io import atomic_write_json
from argent.job_records import JobRecordError, job_record_files, parse_run_job, read_job_record
from argent.layout import Results, RunFolder, run_dir
from argent.plan.flops import step_flops, step_seconds
from argent.plan.groups import TUNED_VARIANT, Plan, RunKey, run_experiment, trial_overrides
from argent.typed import check_range, from_dict
from argent.workflow_config import setting

RECORD = Path("bench") / "step_times.json"

# The MFU the estimate assumes until bench/gpu_check.py has measured this repository's step on a GPU
# (then set cost.estimate_mfu): a published one. open_clip's ViT-B/16 on LAION-400M took 10,700
# A100-40GB hours for its 32 epochs (laion400m_e32, ≈ 12.8 B samples; open_clip docs/PRETRAINED.md);
# at this FLOP model's 122.6 GFLOP per training sample that is 13 % of the A100's 312 TFLOP/s bf16
# peak (its B/32: 11 %, L/14: 12 %; docs/scaling.md §4). Our S and B towers are that size, at patch 16.
PUBLISHED_MFU = 0.13
PUBLISHED_MFU_SOURCE = "published: open_clip ViT-B/16 on A100, docs/scaling.md §4"


@dataclass(frozen=True)
class CostSection:
    """The ``cost:`` section of the workflow config (``argent.typed.SECTIONS``); these are its keys'
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


def mfu_source(cfg: dict[str, Any]) -> str:
    """Where the estimate's MFU comes from: the config's ``cost.estimate_mfu``, else the published default."""
    raw = cfg.get("cost") or {}
    return "config cost.estimate_mfu" if isinstance(raw, dict) and raw.get("estimate_mfu") is not None \
        else PUBLISHED_MFU_SOURCE


def cost_section(cfg: dict[str, Any], base_dir: Path | None = None) -> CostSection:
    """The typed ``cost:`` section (an unset key, or one set to null, takes its default); a typo or a
    bad value is a ``ConfigError`` naming ``cost.<key>``. The parser ``SECTIONS`` names for ``cost``."""
    raw = cfg.get("cost") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"cost: expected a mapping, got {raw!r}")
    return from_dict(CostSection, {k: v for k, v in raw.items() if v is not None}, "cost")


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


def _span(values: dict[str, float], fmt: str) -> str:
    """"lo–hi" of the values in format ``fmt`` (one value when both read the same)."""
    lo, hi = format(min(values.values()), fmt), format(max(values.values()), fmt)
    return lo if lo == hi else f"{lo}–{hi}"


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
                seconds = self.estimate[size].seconds.get(TUNED_VARIANT)
            if seconds is None:
                return None
            total += self.study_steps * seconds
        return total * max(self.gpus if self.gpus > 0 else self.threads, 1) / 3600

    def estimated_hours(self) -> float | None:
        """The group's hours with the FLOP-model estimate where no step time is known; None when the
        group is measured throughout (``hours()`` says it) or a size has neither."""
        return None if self.hours() is not None else self.hours(estimated=True)


@dataclass(frozen=True)
class SizeRecord:
    """One size of the measured record (``record_from_runs`` writes it)."""

    step_seconds: float
    batch_size: int
    device: str
    jobs: int = 0
    includes: str = ""

    def __post_init__(self) -> None:
        check_range("step_seconds", self.step_seconds, low=0.0, low_open=True)
        check_range("batch_size", self.batch_size, low=1)


@dataclass(frozen=True)
class StepRecord:
    """The measured record ``bench/step_times.json``: the machine, the results it came from, per size."""

    sizes: dict[str, SizeRecord] = field(default_factory=dict)
    machine: str = "?"
    source: str = ""


def _record(cfg: dict[str, Any], base_dir: Path) -> tuple[Path, StepRecord]:
    path = Path(cost_section(cfg).step_times or Path(setting(cfg, "results")) / RECORD)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        return path, StepRecord()
    fix = "rewrite it with argent plan --record-from RESULTS, or delete it (its sizes are then unknown)"
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"cost.step_times: {path}: not JSON ({err}); {fix}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"cost.step_times: {path}: expected a mapping {{machine, source, sizes: {{<size>: "
                          f"{{step_seconds, batch_size, device}}}}}}, got {type(data).__name__}; {fix}")
    try:
        return path, from_dict(StepRecord, data)
    except ConfigError as err:
        raise ConfigError(f"cost.step_times: {path}: {err}; {fix}") from None


def step_time(cfg: dict[str, Any], size: str, batch: int, device: str, base_dir: Path) -> StepTime:
    cost = cost_section(cfg)
    configured = cost.step_seconds.get(size)
    if configured is not None:
        ref = int(cost.batch_size or batch)
        note = f" scaled from batch {ref}" if ref != batch else ""
        measured = f" ({cost.note})" if cost.note else ""
        return StepTime(float(configured) * batch / ref, f"config cost.step_seconds{measured}{note}")
    path, record = _record(cfg, base_dir)
    entry = record.sizes.get(size)
    if entry and entry.device.split(":")[0] == device.split(":")[0]:
        ref = entry.batch_size
        note = f", scaled from batch {ref}" if ref != batch else ""
        return StepTime(entry.step_seconds * batch / ref, f"measured on {record.machine} ({entry.device}){note}: {path}")
    return StepTime(None, f"unknown: set cost.step_seconds.{size} or record one (argent plan --record-from)"
                          f"{_nearby_record(cfg, base_dir, path, size, device)}")


def _nearby_record(cfg: dict[str, Any], base_dir: Path, own: Path, size: str, device: str) -> str:
    """A record of another results folder beside this config's (another config's, e.g. results/quick for
    results/) that measured ``size`` on this device kind, named with the ``--set`` that reads it. Offered,
    not used: that config's model or data at this size may differ, and a step time is never guessed."""
    results = base_dir / setting(cfg, "results")
    found = [results.parent / RECORD, *sorted(results.parent.glob(f"*/{RECORD}")), *sorted(results.glob(f"*/{RECORD}"))]
    for path in dict.fromkeys(p for p in found if p.resolve() != own.resolve()):
        try:
            data = json.loads(path.read_text())
            record = from_dict(StepRecord, data) if isinstance(data, dict) else StepRecord()
        except (OSError, ValueError):  # unreadable or malformed (ConfigError is a ValueError): not offered
            continue
        entry = record.sizes.get(size)
        if entry and entry.device.split(":")[0] == device.split(":")[0]:
            shown = path.relative_to(base_dir) if path.is_relative_to(base_dir) else path
            return f"; {shown} has {size} on {entry.device} ({record.machine}): --set cost.step_times={shown}"
    return ""


def flop_estimate(gcfg: dict[str, Any], keys: list[RunKey], trained: set[RunKey], gpus: int, cost: CostSection,
                  base_dir: Path, source: str = PUBLISHED_MFU_SOURCE) -> Estimate:
    """The FLOP-model estimate for the runs ``keys`` (one group, one size): per variant, the FLOPs of
    one step at the run's own batch (its resolved config: model, variant, train) over ``gpus`` GPUs
    at ``cost.estimate_mfu`` of ``cost.gpu_peak_tflops``."""
    seconds: dict[str, float] = {}
    tflop: dict[str, float] = {}
    runs: dict[str, int] = {}
    for key in keys:
        if key.variant not in seconds:
            exp = run_experiment(gcfg, key, base_dir)
            flops = step_flops(exp.model, exp.variant).per_step(exp.train.batch_size)
            tflop[key.variant] = flops / 1e12
            seconds[key.variant] = step_seconds(flops, cost.estimate_mfu, cost.gpu_peak_tflops, gpus)
        runs[key.variant] = runs.get(key.variant, 0) + (key in trained)
    return Estimate(seconds, runs, tflop, cost.estimate_mfu, cost.gpu_peak_tflops, max(gpus, 1), source)


def group_costs(cfg: dict[str, Any], plan: Plan, base_dir: Path = Path(".")) -> list[GroupCost]:
    cost = cost_section(cfg)
    out = []
    for group in plan.active():
        gcfg = plan.configs[group.name]
        keys = group.run_keys()
        trained = [k for k in keys if plan.home[k] == k]
        device = str(setting(gcfg, "train", "device"))
        gc = GroupCost(group.name, len(trained), len(keys) - len(trained), device, int(setting(gcfg, "runs", "gpus")),
                       int(setting(gcfg, "runs", "threads_per_run")), {}, {}, {}, {})
        for size in group.sizes:
            train = deep_merge(gcfg.get("train") or {}, (gcfg.get("train_by_size") or {}).get(size) or {})
            gc.steps[size] = int(train.get("steps", 0))
            gc.batch[size] = int(train.get("batch_size", 0))
            gc.runs_by_size[size] = sum(1 for k in trained if k.size == size)
            gc.step_time[size] = step_time(cfg, size, gc.batch[size], device, base_dir)
            if gc.step_time[size].seconds is None and device.split(":")[0] == "cuda":
                gc.estimate[size] = flop_estimate(gcfg, [k for k in keys if k.size == size], set(trained), gc.gpus,
                                                  cost, base_dir, mfu_source(cfg))
        if TUNED_VARIANT in group.variants:
            n_trials = int(setting(gcfg, "tune", "n_trials"))
            trial = trial_overrides(gcfg)
            gc.study_steps = n_trials * int((trial.get("train") or {}).get("steps", 0))
            gc.notes.append(f"study: {n_trials} trials × {(trial.get('train') or {}).get('steps')} steps")
        out.append(gc)
    return out


def _hours(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f}"


def summary_line(costs: list[GroupCost], plan: Plan) -> str:
    """The one-line total the Snakefile prints at DAG build: the measured total, and apart from it,
    labelled, the FLOP-model estimate of the groups without a measured step time (GPU configs)."""
    runs = sum(c.runs for c in costs)
    borrowed = sum(c.borrowed for c in costs)
    by_unit: dict[str, float] = {}
    estimated: dict[str, float] = {}
    unknown = sorted({s for c in costs for s, st in c.step_time.items() if st.seconds is None})
    for c in costs:
        h, e = c.hours(), c.estimated_hours()
        if h is not None:
            by_unit[c.unit] = by_unit.get(c.unit, 0.0) + h
        if e is not None:
            estimated[c.unit] = estimated.get(c.unit, 0.0) + e
    hours = ", ".join(f"≈ {v:,.1f} {u}" for u, v in by_unit.items()) or (
        "no measured step time" if estimated else "no estimate")
    tail = f"; step time unknown for size(s) {', '.join(unknown)} (left out of the total)" if unknown else ""
    if estimated:
        n = sum(1 for c in costs if c.estimated_hours() is not None)
        labels = "; ".join(sorted({est.label() for c in costs for est in c.estimate.values()}))
        tail += (f"; FLOP-model estimate at {labels} for the {n} group(s) not measured, not in the total: "
                 + ", ".join(f"≈ {v:,.1f} {u}" for u, v in estimated.items()))
    left = f"; {len(plan.left_out)} group(s) left out" if plan.left_out else ""
    return (f"argent plan: {runs} training runs ({borrowed} borrowed, not retrained) in {len(costs)} groups, "
            f"{hours}{tail}{left}")


def _columns(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()
    return [fmt(head), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows]


def estimate_table(costs: list[GroupCost]) -> list[str]:
    """The FLOP-model estimates of the sizes without a step time, as a table of their own under a
    heading that says what they are; [] when there are none (CPU configs, everything measured)."""
    rows = []
    for c in costs:
        scale = max(c.gpus or c.threads, 1) / 3600
        for size, est in c.estimate.items():
            rows.append((c.group, size, str(c.runs_by_size[size]), str(est.gpus), _span(est.tflop, ".1f"),
                         _span(est.seconds, ".3g"), f"{_hours(c.steps[size] * est.run_seconds() * scale)} {c.unit}"))
    if not rows:
        return []
    first = next(est for c in costs for est in c.estimate.values())
    head = ("group", "size", "runs", "GPUs/run", "TFLOP/step", "s/step (estimate)", "hours (estimate)")
    return ["", f"Estimate, not measured, for the sizes without a step time (in no total above): the FLOP model's "
                f"training FLOPs per step (argent/plan/flops.py; a range over the variants) ÷ (GPUs/run × "
                f"cost.estimate_mfu {first.mfu:g} ({first.mfu_source}) × cost.gpu_peak_tflops "
                f"{first.peak_tflops:g} TFLOP/s)",
            *_columns(head, rows)]


def table(costs: list[GroupCost]) -> str:
    head = ("group", "size", "runs", "borrowed", "steps/run", "batch", "device", "GPUs/run", "s/step", "hours",
            "step time from")
    rows = []
    for c in costs:
        for i, size in enumerate(c.step_time):
            st = c.step_time[size]
            per_size = None if st.seconds is None else (
                c.runs_by_size[size] * c.steps[size] * st.seconds * max(c.gpus or c.threads, 1) / 3600)
            rows.append((c.group, size, str(c.runs_by_size[size]), str(c.borrowed) if i == 0 else "",
                         f"{c.steps[size]:,}", str(c.batch[size]), c.device, str(c.gpus),
                         "?" if st.seconds is None else f"{st.seconds:.4g}", f"{_hours(per_size)} {c.unit}", st.source))
        for note in c.notes:
            rows.append((c.group, "", "", "", "", "", "", "", "", "", note))
    lines = _columns(head, rows)
    lines.append("")
    for c in costs:
        estimated = c.estimated_hours()
        mfu = ", ".join(sorted({est.mfu_text for est in c.estimate.values()}))
        label = ("" if estimated is None
                 else f"; estimate (FLOP model at {mfu}, not measured) ≈ {estimated:,.1f} {c.unit}")
        lines.append(f"{c.group}: {c.runs} runs trained, {_hours(c.hours())} {c.unit}{label}")
    lines += estimate_table(costs)
    return "\n".join(lines)


def cost_line(cfg: dict[str, Any], plan: Plan, base_dir: Path = Path(".")) -> str:
    return summary_line(group_costs(cfg, plan, base_dir), plan)


# ---- the measured record ------------------------------------------------------------------------


@dataclass(frozen=True)
class _RecordedTrain:
    steps: int
    batch_size: int
    device: str


def _recorded_train(train: dict[str, Any], where: Path) -> _RecordedTrain:
    """A run's ``train.steps``, ``batch_size`` and ``device`` from its stored config, each checked."""
    missing = [k for k in ("steps", "batch_size", "device") if k not in train]
    if missing:
        raise ConfigError(f"--record-from: {where}: train.{missing[0]} missing (expected the run's resolved config, "
                          f"with train.steps, train.batch_size and train.device); re-run its training job")
    try:
        out = from_dict(_RecordedTrain, {k: train[k] for k in ("steps", "batch_size", "device")}, "train")
        check_range("train.steps", out.steps, low=1)
        check_range("train.batch_size", out.batch_size, low=1)
    except ConfigError as err:
        raise ConfigError(f"--record-from: {where}: {err}") from None
    return out


def record_from_runs(results: Path, out: Path) -> dict[str, Any]:
    """Step seconds per size from finished training jobs of a results folder: each job's record
    (``argent.job_records``: the job's wall seconds, start-up included) over the run's steps, median per
    size. Written with the machine and device it was measured on."""
    per_size: dict[str, list[tuple[float, int, str]]] = {}
    records = Results(results).job_records
    for path in job_record_files(records, "train"):
        run, group = parse_run_job(path.stem), path.parent.name
        if run is None:
            continue  # not a run's job
        folder = RunFolder(run_dir(results, group, run.variant, run.size, run.seed))
        if not folder.config.is_file() or not folder.summary.is_file():
            continue
        resolved = folder.stored_config()
        if not isinstance(resolved.get("train"), dict) or "size" not in resolved:
            continue  # an unreadable config.yaml: the run's own readers name it
        try:
            job = read_job_record(path, records)
        except JobRecordError as err:
            raise ConfigError(f"--record-from: {err}") from None
        train = _recorded_train(resolved["train"], folder.config)
        wall = statistics.fmean(row.wall_s for row in job)  # a job measured more than once: its mean
        per_size.setdefault(str(resolved["size"]), []).append((wall / train.steps, train.batch_size, train.device))
    if not per_size:
        raise ConfigError(f"--record-from {results}: no finished training job with a job record "
                          f"(benchmarks/train/<group>/*.tsv beside runs/<group>/...); run the workflow first")
    sizes = {}
    for size, rows in per_size.items():
        batch, device = rows[0][1], rows[0][2]
        same = [s for s, b, d in rows if b == batch and d == device]
        sizes[size] = {"step_seconds": statistics.median(same), "batch_size": batch, "device": device,
                       "jobs": len(same), "includes": "job start-up and periodic checkpoints"}
    record = {"machine": f"{platform.node()} ({platform.processor() or platform.machine()})", "source": str(results),
              "sizes": sizes}
    atomic_write_json(out, record)
    return record
