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
from argent.layout import Results, RunFolder, run_dir, split_run
from argent.plan.groups import TUNED_VARIANT, Plan, trial_overrides
from argent.workflow_config import setting

RECORD = Path("bench") / "step_times.json"


@dataclass(frozen=True)
class StepTime:
    seconds: float | None
    source: str


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

    @property
    def unit(self) -> str:
        return "GPU-h" if self.gpus > 0 else "CPU-core-h"

    def hours(self) -> float | None:
        """Device hours of the group's training (and study); None when a size's step time is unknown."""
        total = 0.0
        for size, n in self.runs_by_size.items():
            st = self.step_time[size]
            if st.seconds is None:
                return None
            total += n * self.steps[size] * st.seconds
        if self.study_steps:
            size = min(self.runs_by_size, key=lambda s: self.steps[s]) if self.runs_by_size else None
            if size is None or self.step_time[size].seconds is None:
                return None
            total += self.study_steps * self.step_time[size].seconds
        return total * max(self.gpus if self.gpus > 0 else self.threads, 1) / 3600


def _record(cfg: dict[str, Any], base_dir: Path) -> tuple[Path, dict[str, Any]]:
    cost = cfg.get("cost") or {}
    path = Path(cost.get("step_times") or Path(cfg.get("results", "results")) / RECORD)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        return path, {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ConfigError(f"cost.step_times: {path}: not JSON ({err}); rewrite it with argent plan --record-from") from None
    return path, data if isinstance(data, dict) else {}


def step_time(cfg: dict[str, Any], size: str, batch: int, device: str, base_dir: Path) -> StepTime:
    cost = cfg.get("cost") or {}
    configured = (cost.get("step_seconds") or {}).get(size)
    if configured is not None:
        ref = int(cost.get("batch_size") or batch)
        note = f" scaled from batch {ref}" if ref != batch else ""
        return StepTime(float(configured) * batch / ref, f"config cost.step_seconds{note}")
    path, record = _record(cfg, base_dir)
    entry = (record.get("sizes") or {}).get(size)
    if entry and str(entry.get("device", "")).split(":")[0] == device.split(":")[0]:
        ref = int(entry["batch_size"])
        note = f", scaled from batch {ref}" if ref != batch else ""
        return StepTime(float(entry["step_seconds"]) * batch / ref,
                        f"measured on {record.get('machine', '?')} ({entry['device']}){note}: {path}")
    return StepTime(None, "unknown: set cost.step_seconds." + size + " or record one (argent plan --record-from)")


def group_costs(cfg: dict[str, Any], plan: Plan, base_dir: Path = Path(".")) -> list[GroupCost]:
    out = []
    for group in plan.active():
        gcfg = plan.configs[group.name]
        runs = gcfg.get("runs") or {}
        keys = group.run_keys()
        trained = [k for k in keys if plan.home[k] == k]
        device = str((gcfg.get("train") or {}).get("device", "cpu"))
        gc = GroupCost(group.name, len(trained), len(keys) - len(trained), device, int(runs.get("gpus", 0)),
                       int(runs.get("threads_per_run", 1)), {}, {}, {}, {})
        for size in group.sizes:
            train = deep_merge(gcfg.get("train") or {}, (gcfg.get("train_by_size") or {}).get(size) or {})
            gc.steps[size] = int(train.get("steps", 0))
            gc.batch[size] = int(train.get("batch_size", 0))
            gc.runs_by_size[size] = sum(1 for k in trained if k.size == size)
            gc.step_time[size] = step_time(cfg, size, gc.batch[size], device, base_dir)
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
    """The one-line total the Snakefile prints at DAG build."""
    runs = sum(c.runs for c in costs)
    borrowed = sum(c.borrowed for c in costs)
    by_unit: dict[str, float] = {}
    unknown = sorted({s for c in costs for s, st in c.step_time.items() if st.seconds is None})
    for c in costs:
        h = c.hours()
        if h is not None:
            by_unit[c.unit] = by_unit.get(c.unit, 0.0) + h
    hours = ", ".join(f"≈ {v:,.1f} {u}" for u, v in by_unit.items()) or "no estimate"
    tail = f"; step time unknown for size(s) {', '.join(unknown)} (left out of the total)" if unknown else ""
    left = f"; {len(plan.left_out)} group(s) left out" if plan.left_out else ""
    return (f"argent plan: {runs} training runs ({borrowed} borrowed, not retrained) in {len(costs)} groups, "
            f"{hours}{tail}{left}")


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
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()
    lines = [fmt(head), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows]
    lines.append("")
    for c in costs:
        lines.append(f"{c.group}: {c.runs} runs trained, {_hours(c.hours())} {c.unit}")
    return "\n".join(lines)


def cost_line(cfg: dict[str, Any], plan: Plan, base_dir: Path = Path(".")) -> str:
    return summary_line(group_costs(cfg, plan, base_dir), plan)


# ---- the measured record ------------------------------------------------------------------------


def record_from_runs(results: Path, out: Path) -> dict[str, Any]:
    """Step seconds per size from finished training jobs of a results folder: Snakemake's benchmark
    record (wall seconds of the job, start-up included) over the run's steps, median per size.
    Written with the machine and device it was measured on."""
    per_size: dict[str, list[tuple[float, int, str]]] = {}
    for tsv in sorted((Results(results).benchmarks / "train").rglob("*.tsv")):
        group = tsv.parent.name
        stem = tsv.stem  # <variant>-<size>-seed<k>
        run, _, seed = stem.rpartition("-seed")
        variant, size = split_run(run)
        folder = RunFolder(run_dir(results, group, variant, size, seed))
        if not folder.config.is_file() or not folder.summary.is_file():
            continue
        resolved = folder.stored_config()
        if not isinstance(resolved.get("train"), dict) or "size" not in resolved:
            continue  # an unreadable config.yaml: the run's own readers name it
        lines = tsv.read_text().splitlines()
        if len(lines) < 2:
            continue
        seconds = float(lines[1].split("\t")[0])
        train = resolved["train"]
        per_size.setdefault(resolved["size"], []).append((seconds / int(train["steps"]), int(train["batch_size"]),
                                                          str(train["device"])))
    if not per_size:
        raise ConfigError(f"--record-from {results}: no finished training job with a benchmark record "
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
