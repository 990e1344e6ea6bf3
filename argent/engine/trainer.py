"""The training loop: one (variant, size, seed) run into one folder.

The run folder is the truth: ``config.yaml`` (fully resolved), ``metrics.jsonl`` (every logged
number), ``checkpoint.pt`` (model, optimiser, scheduler, step, RNG states, config hash; atomic),
``summary.json`` (written last: its presence means the run finished).

A SIGUSR1 or SIGTERM (a scheduler's warning, a time limit, a preemption) stops the loop at the next
step boundary with a checkpoint of that step (argent/engine/preemption.py): a resume loses nothing.

``_train`` reads top to bottom as its phases: ``_set_up`` (device, seeded model, optimiser, scheduler,
objective, the folder), ``_resume`` (a checkpoint into the run; a finished run returns its summary),
``_start_loop`` (towers, batch stream, tracker, metrics file), ``_steps`` (the step loop) and ``_finish``
(summary, provenance, promotion, tracker); one step's NaN policy, update and metrics record are
argent/engine/step.py's. What they share is one ``RunState`` (argent/engine/run_state.py).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import yaml

from argent.config import ConfigError, ExperimentConfig
from argent.data.policy import skip_counts
from argent.device import require_device
from argent.engine import distributed as dist_utils
from argent.engine.checkpoint import atomic_torch_save
from argent.engine.optim import build_optimizer, build_scheduler
from argent.engine.preemption import Preempted, StopRequest
from argent.engine.progress import Progress
from argent.engine.provenance import provenance, run_record
from argent.engine.run_state import Learner, RunState
from argent.engine.step import (
    BatchEncoder,
    autocast,
    compile_step,
    hard_negatives,
    skip_or_stop,
    to_device,
    update,
    write_metrics_record,
)
from argent.engine.summary import add_counts, plot_curves, run_summary
from argent.engine.train_data import RunInputs, report_negatives_coverage, run_inputs
from argent.engine.train_data import train_stream as _loader
from argent.io import atomic_write_text, flatten, read_json
from argent.losses import Objective
from argent.models import DualEncoder, build_model
from argent.runs import (
    RunFolder,
    clean_stale,
    default_tracking_uri,
    hold_writer,
    holds_a_run,
    promote,
    read_metrics,
    resume_state,
    write_provenance,
)
from argent.tracking import RUN_RECORD, Tracker, run_tags

log = logging.getLogger("argent.train")

Batches = Callable[[int], Iterator[dict[str, Any]]]
BatchHook = Callable[[int, dict[str, Any]], dict[str, Any]]
OnCheckpoint = Callable[[int, DualEncoder], None]


def train(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    resume: str = "no",
    batches: Batches | None = None,
    batch_hook: BatchHook | None = None,
    on_checkpoint: OnCheckpoint | None = None,
    preemptible: bool = True,
) -> dict[str, Any]:
    """Train one run. ``resume``: "no" (start fresh), "strict" (continue from the checkpoint; refuse one
    made under a different config), "auto" (continue when compatible, else start fresh; for the
    workflow, where a changed config must retrain). ``batches(start_batch)`` overrides the configured loader (tests, benchmarks);
    ``batch_hook(step, batch)`` may alter a batch (fault injection in tests); ``on_checkpoint(step,
    model)`` runs on rank 0 after every checkpoint (e.g. a validation score for an Optuna pruner; an
    exception it raises stops training with the checkpoint already saved). ``preemptible``: stop at the next
    step with a checkpoint on SIGUSR1/SIGTERM/SIGINT and raise ``Preempted`` (``Interrupted`` for SIGINT;
    argent/engine/preemption.py); False leaves the signals to the caller."""
    stop = StopRequest()
    if preemptible:
        stop.listen()  # from the start: a signal during start-up still gets one step and its checkpoint
    try:
        require_device(cfg.train.device)  # a start that cannot run leaves no folder behind (the lock creates it)
        main = int(os.environ.get("RANK", "0")) == 0
        # One writer per run folder (rank 0 writes it): a second start stops here, before touching it.
        with hold_writer(RunFolder(Path(out_dir)), "argent train") if main else nullcontext():
            try:
                return _train(cfg, out_dir, resume, batches, batch_hook, on_checkpoint, stop)
            except BaseException:
                # A staged re-run that failed before its first checkpoint leaves nothing behind (only its own
                # config and metrics); one with a checkpoint stays for a resume, a finished one (summary
                # written) for its promotion. Either way the folder's earlier run is untouched until a
                # re-run has finished.
                staging = RunFolder(Path(out_dir)).staging
                if main and staging.root.exists() and not staging.checkpoint.exists() and not staging.summary.exists():
                    shutil.rmtree(staging.root, ignore_errors=True)
                raise
    finally:
        stop.restore()


# ---- the loop, as its phases ---------------------------------------------------------------


def _train(cfg: ExperimentConfig, out_dir: str | Path, resume: str, batches: Batches | None,
           batch_hook: BatchHook | None, on_checkpoint: OnCheckpoint | None, stop: StopRequest) -> dict[str, Any]:
    """``train`` inside its writer's lock: set up, resume, the step loop, finish."""
    r = _set_up(cfg, RunFolder(Path(out_dir)))
    inputs = run_inputs(cfg) if batches is None and r.is_main else None  # the files it reads (rank 0 stamps them)
    finished = _resume(r, resume, inputs)
    if finished is not None:
        return finished
    _start_loop(r, batches)
    loop = r.loop
    try:
        _steps(r, batch_hook, on_checkpoint, stop)
        return _finish(r)
    except BaseException as err:
        if r.is_main:
            loop.tracker.finish("KILLED" if isinstance(err, Preempted) else "FAILED")
        raise
    finally:
        loop.stream = None  # the loader's workers ignore stop signals: shut them down in order now (preemption.py)
        if loop.metrics_file:
            loop.metrics_file.close()
        loop.progress.close()
        r.ctx.cleanup()


def _set_up(cfg: ExperimentConfig, run: RunFolder) -> RunState:
    """The process group on the device ``train`` checked, the seeded model, its optimiser, scheduler and
    objective; rank 0 makes the folder and clears what a killed run left in it."""
    ctx = dist_utils.setup(cfg.train.device)
    if cfg.train.deterministic:
        torch.use_deterministic_algorithms(True)
    config_hash, cfg_dict, segments = cfg.result_hash(), cfg.to_dict(), [provenance(ctx.device)]

    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, cfg.variant.geometry).to(ctx.device)
    optimizer = build_optimizer(model, cfg.optim)
    learner = Learner(model, optimizer, build_scheduler(optimizer, cfg.optim, cfg.train.steps), Objective(cfg.variant))
    r = RunState(cfg, run, run, ctx, config_hash, cfg_dict, segments, learner)
    if r.is_main:
        run.root.mkdir(parents=True, exist_ok=True)
        clean_stale(run)  # also promotes a finished staged run a kill left behind
    return r


def _resume(r: RunState, resume: str, inputs: RunInputs | None = None) -> dict[str, Any] | None:
    """Continue from the checkpoint ``resume`` allows, or start fresh (staged in a folder that holds a
    run); rank 0 writes the resolved config. A run already finished with this config on the same data
    (the fingerprints of ``inputs``, argent/runs/fingerprint.py): its summary (rank 0; {} on the others),
    with nothing written. None: train."""
    state, r.files = resume_state(r.run, resume, r.config_hash, r.device, r.is_main, inputs)
    if state is not None:
        r.load(state)
        if r.counters.step >= r.cfg.train.steps and r.files.summary.is_file():
            # Finished already: its summary (with the data counts of the passes that trained it) stays
            # as it is; re-writing it from a resumed stream that reads nothing would zero them.
            finished = read_json(r.files.summary)
            if finished.get("config_hash") == r.config_hash:
                log.info("%s: already finished at step %d with this config; nothing to do", r.files.root,
                         r.counters.step)
                if r.is_main and r.files != r.run:
                    promote(r.files, r.run)  # a staged run whose promotion was cut short: finish it
                r.ctx.cleanup()
                return finished if r.is_main else {}
    elif holds_a_run(r.run):
        # A fresh run into a folder that holds a run is staged until it has finished: whatever stops
        # it (a bad config, a NaN at step 3, a kill), the folder's earlier run stays whole.
        r.files = r.run.staging
        if r.is_main:
            # An unfinished staged re-run of another config, discarded (clean_stale promoted a finished one).
            shutil.rmtree(r.files.root, ignore_errors=True)
            r.files.root.mkdir(parents=True)
    if inputs is not None:  # what the checkpoints and the summary record: a resume re-reads no unchanged file
        r.counters.inputs = inputs.record(state.get("inputs") if state else None)
    if r.is_main:
        atomic_write_text(r.files.config, yaml.safe_dump(r.cfg_dict, sort_keys=False))
    return None


def _start_loop(r: RunState, batches: Batches | None) -> None:
    """What the loop trains and writes through: the (wrapped, compiled) towers, the batch stream from
    the run's step, the tracker, the progress line and, on rank 0, the metrics file."""
    cfg, ctx, loop, step = r.cfg, r.ctx, r.loop, r.counters.step
    loop.encoder = ctx.wrap(BatchEncoder(r.learner.model, cfg.variant.use_boxes))
    if cfg.train.compile:
        loop.encoder = compile_step(loop.encoder, "the towers")
    per_rank = cfg.train.batch_size // ctx.world_size
    if per_rank * ctx.world_size != cfg.train.batch_size:
        raise ConfigError(f"train.batch_size {cfg.train.batch_size} is not divisible by the world size {ctx.world_size}")
    loop.stream = batches(step) if batches else _loader(cfg, per_rank, ctx, start_batch=step)

    loop.tracker = Tracker(cfg.tracking.uri or default_tracking_uri(r.run.root),
                           cfg.tracking.experiment, f"{cfg.variant_name}-{cfg.size}-seed{cfg.seed}",
                           run_tags(r.cfg_dict, r.run.root, r.config_hash),
                           enabled=cfg.tracking.enabled and r.is_main, record=r.run.root / RUN_RECORD)
    if r.is_main:
        loop.tracker.log_params(r.cfg_dict)
    loop.synced = len(read_metrics(r.files.metrics)) if r.is_main else 0
    r.counters.first_step = step
    loop.progress = Progress(cfg.train.steps, step, enabled=r.is_main)
    r.learner.model.train()
    loop.t_last = time.perf_counter()
    loop.metrics_file = r.files.metrics.open("a") if r.is_main else None


def _steps(r: RunState, batch_hook: BatchHook | None, on_checkpoint: OnCheckpoint | None, stop: StopRequest) -> None:
    """The step loop, to train.steps: a batch, the loss, the NaN policy, the update, rank 0's metrics
    record, the checkpoints and a stop request."""
    cfg, counters, loop = r.cfg, r.counters, r.loop
    while counters.step < cfg.train.steps:
        t_wait = time.perf_counter()
        batch = next(loop.stream)
        loop.wait_s += time.perf_counter() - t_wait
        logs_now = r.is_main and ((counters.step + 1) % cfg.train.log_every == 0 or counters.step + 1 == cfg.train.steps)
        if batch_hook:
            batch = batch_hook(counters.step, batch)
        batch = to_device(batch, r.device)
        with autocast(cfg, r.device):
            emb, curv, scale = loop.encoder(batch)
        out = r.learner.objective(emb, curv=curv, logit_scale=scale, geometry=cfg.variant.geometry,
                                  hard=hard_negatives(emb, batch), with_diagnostics=logs_now)
        if skip_or_stop(r, out):
            continue
        update(r, out)
        if r.is_main and (counters.step % cfg.train.log_every == 0 or counters.step == cfg.train.steps):
            write_metrics_record(r, out, emb, curv)
        else:
            loop.progress.advance(counters.step)
        _checkpoint(r, on_checkpoint, stop)


def _checkpoint(r: RunState, on_checkpoint: OnCheckpoint | None, stop: StopRequest) -> None:
    """Every train.checkpoint_every steps a checkpoint (then ``on_checkpoint`` on rank 0); on a stop
    request every rank agrees on, a checkpoint of this step and ``Preempted`` (or ``Interrupted``)."""
    step, steps, every = r.counters.step, r.cfg.train.steps, r.cfg.train.checkpoint_every
    model = r.learner.model
    if step % every == 0 and step < steps:
        _save(r, step)
        if on_checkpoint and r.is_main:
            model.eval()
            with torch.no_grad():
                on_checkpoint(step, model)
            model.train()
    if step < steps and stop.agreed(r.device, r.ctx.world_size):
        if step % every:
            _save(r, step)
        if r.ctx.world_size > 1:
            torch.distributed.barrier()  # no rank leaves before rank 0's checkpoint is on disk
        raise stop.stopped(f"stopped on {stop.received} at step {step} of {steps}, checkpoint "
                           f"{r.files.checkpoint} written; {_continues(stop.received)} at step {step}", step)


def _save(r: RunState, at_step: int) -> None:
    """The run's data counts so far; rank 0 writes the checkpoint of ``at_step`` and sends the tracker
    the metrics records written since the last one."""
    # The earlier segments' counts plus this one's (a collective under DDP: every rank saves at the same
    # steps). A segment that trained no step (resumed at the end) read nothing of its own; its loader's
    # counts made once per process repeat the earlier segment's.
    counters, loop = r.counters, r.loop
    fresh = at_step > counters.first_step or counters.earlier_counts is None
    counters.data_skips = add_counts(counters.earlier_counts or {}, skip_counts(loop.stream) if fresh else None)
    if not r.is_main:
        return
    atomic_torch_save(r.checkpoint(at_step), r.files.checkpoint)
    rows = read_metrics(r.files.metrics)
    loop.tracker.log_metrics(rows[loop.synced:])
    loop.synced = len(rows)


def _finish(r: RunState) -> dict[str, Any]:
    """The last checkpoint; on rank 0 the summary (written last), curves, provenance, a staged re-run's
    promotion and the tracker's artifacts. Rank 0 returns the summary, the others {}."""
    cfg, counters, loop, step = r.cfg, r.counters, r.loop, r.counters.step
    _save(r, step)  # sets data_skips: bad samples by reason, all ranks, every segment (in the checkpoint too)
    if not r.is_main:
        return {}
    trained = step - (0 if counters.earlier_counts else counters.first_step)  # the counts' steps: every segment's
    report_negatives_coverage(cfg, counters.data_skips, trained * cfg.train.batch_size)
    loop.metrics_file.close()
    loop.metrics_file = None
    summary = {**run_summary(cfg, r.files, step, counters.skipped, r.config_hash), **counters.data_skips,
               **({"inputs": counters.inputs} if counters.inputs else {})}  # the bytes it read: outside its identity
    loop.tracker.log_metrics([{"step": step, **flatten(counters.data_skips, sep="/")}])
    plot_curves(r.files)
    write_provenance(r.files, run_record(r.segments))
    atomic_write_text(r.files.summary, json.dumps(summary, indent=2))
    if r.files != r.run:  # the staged re-run has finished: only now does it replace the earlier run
        promote(r.files, r.run)
        r.files = r.run
    for path in (r.files.config, r.files.summary, r.files.curves, r.files.provenance):
        loop.tracker.log_artifact(path)
    loop.tracker.finish()
    return summary


# ---- helpers -------------------------------------------------------------------------------


def _continues(received: str | None) -> str:
    """Who continues a stopped run: the user's Ctrl-C is not retried by the workflow (preemption.py)."""
    if received == "SIGINT":
        return "`argent train --resume` (or the workflow, run again) continues"
    return "the workflow's retry (or `argent train --resume`) continues"


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
