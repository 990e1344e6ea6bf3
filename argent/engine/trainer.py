"""The training loop: one (variant, size, seed) run into one folder.

The run folder is the truth: ``config.yaml`` (fully resolved), ``metrics.jsonl`` (every logged
number), ``checkpoint.pt`` (model, optimiser, scheduler, step, RNG states, config hash; atomic),
``summary.json`` (written last: its presence means the run finished).

A SIGUSR1 or SIGTERM (a scheduler's warning, a time limit, a preemption) stops the loop at the next
step boundary with a checkpoint of that step (argent/engine/preemption.py): a resume loses nothing.

``_train`` reads top to bottom as its phases: ``_set_up`` (device, seeded model, optimiser, scheduler,
objective, the folder), ``_resume`` (a checkpoint into the run; a finished run returns its summary),
``_start_loop`` (towers, batch stream, tracker, metrics file), ``_steps`` (the step loop) and ``_finish``
(summary, provenance, promotion, tracker). What they share is one ``RunState``.
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
from argent.engine.run_state import RunState
from argent.engine.step import (  # noqa: F401  (encode_batch: re-exported, the engine's public step API)
    BatchEncoder,
    autocast,
    compile_step,
    encode_batch,
    first_bad_term,
    hard_negatives,
    to_device,
)
from argent.engine.summary import PERF_PREFIX, add_counts, plot_curves, run_summary
from argent.engine.train_data import (  # noqa: F401  (negatives_config: re-exported, the trainer's name for it)
    RunInputs,
    negatives_config,
    report_negatives_coverage,
    run_inputs,
)
from argent.engine.train_data import train_stream as _loader
from argent.io import ArgentError, atomic_write_text, flatten, read_json
from argent.losses import Objective
from argent.losses.objective import diagnostics as loss_diagnostics
from argent.models import DualEncoder, build_model
from argent.runs import (  # noqa: F401  (ResumeMismatch: the engine's name for it)
    ResumeMismatch,
    RunFolder,
    clean_stale,
    default_tracking_uri,
    hold_writer,
    holds_a_run,
    promote,
    read_checkpoint,
    read_metrics,
    resume_state,
    write_provenance,
)
from argent.tracking import RUN_RECORD, Tracker, run_tags

log = logging.getLogger("argent.train")

Batches = Callable[[int], Iterator[dict[str, Any]]]
BatchHook = Callable[[int, dict[str, Any]], dict[str, Any]]
OnCheckpoint = Callable[[int, DualEncoder], None]


class TrainingDiverged(ArgentError, RuntimeError):
    """A loss term became NaN/inf; the message names the step, the term and the last good checkpoint."""


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
    try:
        _steps(r, batch_hook, on_checkpoint, stop)
        return _finish(r)
    except BaseException as err:
        if r.is_main:
            r.tracker.finish("KILLED" if isinstance(err, Preempted) else "FAILED")
        raise
    finally:
        r.stream = None  # the loader's workers ignore stop signals: shut them down in order now (preemption.py)
        if r.metrics_file:
            r.metrics_file.close()
        r.progress.close()
        r.ctx.cleanup()


def _set_up(cfg: ExperimentConfig, run: RunFolder) -> RunState:
    """The device (and process group), the seeded model, its optimiser, scheduler and objective; rank 0
    makes the folder and clears what a killed run left in it."""
    require_device(cfg.train.device)
    ctx = dist_utils.setup(cfg.train.device)
    if cfg.train.deterministic:
        torch.use_deterministic_algorithms(True)
    config_hash = cfg.result_hash()
    cfg_dict = cfg.to_dict()
    segments = [provenance(ctx.device)]

    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, cfg.variant.geometry).to(ctx.device)
    optimizer = build_optimizer(model, cfg.optim)
    scheduler = build_scheduler(optimizer, cfg.optim, cfg.train.steps)
    r = RunState(cfg, run, run, ctx, config_hash, cfg_dict, segments, model, optimizer, scheduler, Objective(cfg.variant))
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
        if r.step >= r.cfg.train.steps and r.files.summary.is_file():
            # Finished already: its summary (with the data counts of the passes that trained it) stays
            # as it is; re-writing it from a resumed stream that reads nothing would zero them.
            finished = read_json(r.files.summary)
            if finished.get("config_hash") == r.config_hash:
                log.info("%s: already finished at step %d with this config; nothing to do", r.files.root, r.step)
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
        r.inputs = inputs.record(state.get("inputs") if state else None)
    if r.is_main:
        atomic_write_text(r.files.config, yaml.safe_dump(r.cfg_dict, sort_keys=False))
    return None


def _start_loop(r: RunState, batches: Batches | None) -> None:
    """What the loop trains and writes through: the (wrapped, compiled) towers, the batch stream from
    the run's step, the tracker, the progress line and, on rank 0, the metrics file."""
    cfg, ctx = r.cfg, r.ctx
    r.encoder = ctx.wrap(BatchEncoder(r.model, cfg.variant.use_boxes))
    if cfg.train.compile:
        r.encoder = compile_step(r.encoder, "the towers")
    per_rank = cfg.train.batch_size // ctx.world_size
    if per_rank * ctx.world_size != cfg.train.batch_size:
        raise ConfigError(f"train.batch_size {cfg.train.batch_size} is not divisible by the world size {ctx.world_size}")
    r.stream = batches(r.step) if batches else _loader(cfg, per_rank, ctx, start_batch=r.step)

    r.tracker = Tracker(cfg.tracking.uri or default_tracking_uri(r.run.root),
                        cfg.tracking.experiment, f"{cfg.variant_name}-{cfg.size}-seed{cfg.seed}",
                        run_tags(r.cfg_dict, r.run.root, r.config_hash),
                        enabled=cfg.tracking.enabled and r.is_main, record=r.run.root / RUN_RECORD)
    if r.is_main:
        r.tracker.log_params(r.cfg_dict)
    r.synced = len(read_metrics(r.files.metrics)) if r.is_main else 0
    r.first_step = r.step
    r.progress = Progress(cfg.train.steps, r.step, enabled=r.is_main)
    r.model.train()
    r.t_last = time.perf_counter()
    r.metrics_file = r.files.metrics.open("a") if r.is_main else None


def _steps(r: RunState, batch_hook: BatchHook | None, on_checkpoint: OnCheckpoint | None, stop: StopRequest) -> None:
    """The step loop, to train.steps: a batch, the loss, the NaN policy, the update, rank 0's metrics
    record, the checkpoints and a stop request."""
    cfg = r.cfg
    while r.step < cfg.train.steps:
        t_wait = time.perf_counter()
        batch = next(r.stream)
        r.wait_s += time.perf_counter() - t_wait
        logs_now = r.is_main and ((r.step + 1) % cfg.train.log_every == 0 or r.step + 1 == cfg.train.steps)
        if batch_hook:
            batch = batch_hook(r.step, batch)
        batch = to_device(batch, r.device)
        with autocast(cfg, r.device):
            emb, curv, scale = r.encoder(batch)
        hard = hard_negatives(emb, batch)
        out = r.objective(emb, curv=curv, logit_scale=scale, geometry=cfg.variant.geometry, hard=hard,
                          with_diagnostics=logs_now)
        if _skipped(r, out):
            continue
        _update(r, out)
        if r.is_main and (r.step % cfg.train.log_every == 0 or r.step == cfg.train.steps):
            _log_step(r, out, emb, curv)
        else:
            r.progress.advance(r.step)
        _checkpoint(r, on_checkpoint, stop)


def _skipped(r: RunState, out: Any) -> bool:
    """train.nan_policy on a loss term that is not finite: the step skipped (``skip``, within
    train.max_skipped_steps: True), else ``TrainingDiverged`` naming the last good checkpoint.
    False: the loss is finite."""
    bad = first_bad_term(out.total, out.terms)
    if bad is None:
        return False
    if r.cfg.train.nan_policy == "skip" and r.skipped < r.cfg.train.max_skipped_steps:
        r.skipped += 1
        r.optimizer.zero_grad(set_to_none=True)
        log.warning("step %d: loss term %r is not finite; step skipped (%d so far)", r.step, bad, r.skipped)
        r.step += 1
        r.scheduler.step()
        return True
    last = f"{r.files.checkpoint} (step {int(read_checkpoint(r.files.checkpoint)['step'])})" \
        if r.files.checkpoint.exists() else "none (no checkpoint was written yet)"
    if r.files != r.run:
        last += f"; the earlier run in {r.run.root} is untouched"
    raise TrainingDiverged(
        f"step {r.step}: loss term {bad!r} is {out.terms.get(bad, out.total).detach().float().cpu().tolist()}; "
        f"stopped with nothing written for this step. Last good checkpoint: {last}. "
        f"Lower optim.lr, check the data, or set train.nan_policy: skip."
    )


def _update(r: RunState, out: Any) -> None:
    """Backward, the clipped gradient, the optimiser's and the scheduler's step: one step trained."""
    r.optimizer.zero_grad(set_to_none=True)
    out.total.backward()
    if r.cfg.optim.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(r.model.parameters(), r.cfg.optim.grad_clip)
    r.optimizer.step()
    r.model.clamp_scalars_()  # bounds live on the stored scalars (docs in argent/models/dual_encoder.py)
    r.scheduler.step()
    r.step += 1
    r.n_last += r.cfg.train.batch_size


def _log_step(r: RunState, out: Any, emb: Any, curv: torch.Tensor) -> None:
    """Rank 0's metrics record of the step just trained: losses, scalars, diagnostics, throughput."""
    cfg, step = r.cfg, r.step
    record = {"step": step, "lr": r.scheduler.get_last_lr()[0], "loss": out.total.item()}
    record.update({f"loss/{k}": v.item() for k, v in out.terms.items()})
    record.update(r.model.scalars())
    record["skipped_steps"] = r.skipped
    if step % cfg.train.diagnostics_every == 0 or step == cfg.train.steps:
        with torch.no_grad():
            record.update({f"diag/{k}": v for k, v in loss_diagnostics(emb, curv.detach(), cfg.variant).items()})
            record.update({f"diag/{k}": v for k, v in out.diagnostics.items()})
    now = time.perf_counter()
    record[PERF_PREFIX + "samples_per_s"] = r.n_last / max(now - r.t_last, 1e-9)
    # Share of the window's wall time spent waiting for the loader (docs/throughput.md).
    record[PERF_PREFIX + "data_wait"] = r.wait_s / max(now - r.t_last, 1e-9)
    r.t_last, r.n_last, r.wait_s = now, 0, 0.0
    r.metrics_file.write(json.dumps(record) + "\n")
    r.metrics_file.flush()
    r.progress.update(step, record)


def _checkpoint(r: RunState, on_checkpoint: OnCheckpoint | None, stop: StopRequest) -> None:
    """Every train.checkpoint_every steps a checkpoint (then ``on_checkpoint`` on rank 0); on a stop
    request every rank agrees on, a checkpoint of this step and ``Preempted`` (or ``Interrupted``)."""
    step, steps, every = r.step, r.cfg.train.steps, r.cfg.train.checkpoint_every
    if step % every == 0 and step < steps:
        _save(r, step)
        if on_checkpoint and r.is_main:
            r.model.eval()
            with torch.no_grad():
                on_checkpoint(step, r.model)
            r.model.train()
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
    fresh = at_step > r.first_step or r.earlier_counts is None
    r.data_skips = add_counts(r.earlier_counts or {}, skip_counts(r.stream) if fresh else None)
    if not r.is_main:
        return
    atomic_torch_save(r.checkpoint(at_step), r.files.checkpoint)
    rows = read_metrics(r.files.metrics)
    r.tracker.log_metrics(rows[r.synced:])
    r.synced = len(rows)


def _finish(r: RunState) -> dict[str, Any]:
    """The last checkpoint; on rank 0 the summary (written last), curves, provenance, a staged re-run's
    promotion and the tracker's artifacts. Rank 0 returns the summary, the others {}."""
    cfg, step = r.cfg, r.step
    _save(r, step)  # sets data_skips: bad samples by reason, all ranks, every segment (in the checkpoint too)
    if not r.is_main:
        return {}
    trained = step - (0 if r.earlier_counts else r.first_step)  # the counts' steps: every segment's if kept
    report_negatives_coverage(cfg, r.data_skips, trained * cfg.train.batch_size)
    r.metrics_file.close()
    r.metrics_file = None
    summary = {**run_summary(cfg, r.files, step, r.skipped, r.config_hash), **r.data_skips,
               **({"inputs": r.inputs} if r.inputs else {})}  # the bytes it read: outside its identity
    r.tracker.log_metrics([{"step": step, **flatten(r.data_skips, sep="/")}])
    plot_curves(r.files)
    write_provenance(r.files, run_record(r.segments))
    atomic_write_text(r.files.summary, json.dumps(summary, indent=2))
    if r.files != r.run:  # the staged re-run has finished: only now does it replace the earlier run
        promote(r.files, r.run)
        r.files = r.run
    for path in (r.files.config, r.files.summary, r.files.curves, r.files.provenance):
        r.tracker.log_artifact(path)
    r.tracker.finish()
    return summary


# ---- helpers -------------------------------------------------------------------------------


def _continues(received: str | None) -> str:
    """Who continues a stopped run: the user's Ctrl-C is not retried by the workflow (preemption.py)."""
    if received == "SIGINT":
        return "`argent train --resume` (or the workflow, run again) continues"
    return "the workflow's retry (or `argent train --resume`) continues"


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
