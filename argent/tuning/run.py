"""``run(request)``: one ``argent tune`` invocation (join the study, run trials, export), no argparse."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from argent.config import TrackingConfig, from_dict, setting
from argent.engine.preemption import StopRequest
from argent.runs import STUDY_BEST, STUDY_TRIALS, Results
from argent.tuning.config import load_tune
from argent.tuning.export import export_study
from argent.tuning.objective import (
    TrainingObjective,
    ValidationScorer,
    check_space_values,
    workflow_fingerprint,
)
from argent.tuning.storage import StoreLocked, StudySpec, TuneError, study_spec
from argent.tuning.study import WorkerStopped, run_study
from argent.tuning.validation import validation_benchmarks

__all__ = ["TuneRequest", "run"]


@dataclass
class TuneRequest:
    """What to do: the workflow config (+ ``key.path=value`` overrides) and which part of the work."""

    config: Path
    sets: list[str] = field(default_factory=list)
    study: str | None = None  # default: tune.study
    out: Path | None = None  # default: <results>/tune/<study>
    mode: Literal["all", "trials", "export"] = "all"  # trials only (parallel workers), export only, or both
    threads: int = 0  # torch CPU threads (0: torch's default)
    merge_default: bool = True  # merge the config over config/config.yaml, as Snakemake does


def resolve(request: TuneRequest) -> tuple[StudySpec, dict]:
    """The study's spec and the whole (overridden) workflow config."""
    tune, workflow = load_tune(request.config, request.sets, request.study, request.merge_default)
    results = Path(setting(workflow, "results"))
    out = request.out or Results(results).tune(tune.study)
    tracking = from_dict(TrackingConfig, workflow.get("tracking", {}) or {}, "tracking")
    return study_spec(tune, out, tracking, results), workflow


def run(request: TuneRequest) -> int:
    """0: done; 1: exported but no COMPLETE trial (so no best.yaml); 2: a config or data error; 75 (130
    for a Ctrl-C): stopped by a signal, the trial in training re-queued (argent/tuning/study.py)."""
    stop = StopRequest("stopping before the next trial (a trial in training stops at its next step)")
    stop.listen()  # for the whole call: a Ctrl-C is one line, never a traceback from wherever it lands
    try:
        return _run(request, stop)
    except WorkerStopped as err:
        print(f"argent tune: {err}", file=sys.stderr)
        return err.exit_code
    except StoreLocked as err:  # a BaseException (storage.py says why)
        print(f"argent tune: {err}", file=sys.stderr)
        return 2
    except (ValueError, TuneError, FileNotFoundError) as err:  # ConfigError, BadDataError, no shards, ...
        print(f"argent tune: {err}", file=sys.stderr)
        return 2
    finally:
        stop.restore()


def _run(request: TuneRequest, stop: StopRequest) -> int:
    spec, workflow = resolve(request)
    if request.mode != "export":
        if request.threads > 0:
            torch.set_num_threads(request.threads)
        base_dir = Path.cwd()  # relative paths (variants_file) from the working folder, as `argent train` reads them
        entries = validation_benchmarks(spec.tune, workflow)
        objective = TrainingObjective(spec.tune, workflow, base_dir, ValidationScorer(spec.tune.objective, entries),
                                      spec.tracking, spec.experiment)
        check_space_values(spec.tune, objective)
        spec.fingerprint = workflow_fingerprint(spec.tune, entries, objective)
        print(json.dumps(run_study(spec, objective, stop=stop)))
    if request.mode != "trials":
        summary = export_study(spec)
        print(json.dumps({k: summary[k] for k in ("study", "in_budget", "budget", "finished", "best", "notes")},
                         default=str))
        if summary["best"] is None:
            print(f"argent tune: study {spec.tune.study!r} has no COMPLETE trial, so no {STUDY_BEST}; see "
                  f"{spec.out_dir / STUDY_TRIALS} (failure column) for why trials failed or were pruned",
                  file=sys.stderr)
            return 1
    return 0
