"""The training loop: one (variant, size, seed) run into one folder.

The run folder is the truth: ``config.yaml`` (fully resolved), ``metrics.jsonl`` (every logged
number), ``checkpoint.pt`` (model, optimiser, scheduler, step, RNG states, config hash; atomic),
``summary.json`` (written last: its presence means the run finished).

A SIGUSR1 or SIGTERM (a scheduler's warning, a time limit, a preemption) stops the loop at the next
step boundary with a checkpoint of that step (argent/engine/preemption.py): a resume loses nothing.
"""

from __future__ import annotations

import dataclasses
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

from argent.config import IDENTITY_VERSION, ConfigError, DataConfig, ExperimentConfig
from argent.data.loaders import train_loader
from argent.data.policy import skip_counts
from argent.engine import distributed as dist_utils
from argent.engine.checkpoint import atomic_torch_save, rng_state, set_rng_state
from argent.engine.optim import build_optimizer, build_scheduler
from argent.engine.preemption import Preempted, StopRequest, quiet_worker
from argent.engine.progress import Progress
from argent.engine.provenance import merge_segments, provenance, run_record
from argent.engine.step import (  # noqa: F401  (encode_batch: re-exported, the engine's public step API)
    BatchEncoder,
    autocast,
    compile_step,
    encode_batch,
    first_bad_term,
    hard_negatives,
    to_device,
)
from argent.engine.summary import COUNT_KEYS, PERF_PREFIX, add_counts, plot_curves, run_summary
from argent.io import ArgentError, atomic_write_text, flatten, read_json
from argent.layout import RunFolder, default_tracking_uri
from argent.losses import Objective
from argent.losses.objective import diagnostics as loss_diagnostics
from argent.models import DualEncoder, build_model
from argent.negatives.io import summary_path
from argent.runs import (  # noqa: F401  (ResumeMismatch: the engine's name for it)
    ResumeMismatch,
    clean_stale,
    hold_writer,
    holds_a_run,
    promote,
    read_checkpoint,
    read_metrics,
    require_device,
    resume_state,
    write_provenance,
)
from argent.tracking import RUN_RECORD, Tracker, run_tags

log = logging.getLogger("argent.train")


class TrainingDiverged(ArgentError, RuntimeError):
    """A loss term became NaN/inf; the message names the step, the term and the last good checkpoint."""


# ---- the loop ------------------------------------------------------------------------------


def _truncate_metrics(path: Path, last_step: int) -> None:
    """Drop records written after the checkpoint we resume from (they will be recomputed)."""
    rows = [r for r in read_metrics(path) if r["step"] <= last_step]
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in rows))


def train(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    resume: str = "no",
    batches: Callable[[int], Iterator[dict[str, Any]]] | None = None,
    batch_hook: Callable[[int, dict[str, Any]], dict[str, Any]] | None = None,
    on_checkpoint: Callable[[int, DualEncoder], None] | None = None,
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


def _train(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    resume: str,
    batches: Callable[[int], Iterator[dict[str, Any]]] | None,
    batch_hook: Callable[[int, dict[str, Any]], dict[str, Any]] | None,
    on_checkpoint: Callable[[int, DualEncoder], None] | None,
    stop: StopRequest,
) -> dict[str, Any]:
    run = RunFolder(Path(out_dir))
    require_device(cfg.train.device)
    ctx = dist_utils.setup(cfg.train.device)
    device, is_main = ctx.device, ctx.rank == 0
    if cfg.train.deterministic:
        torch.use_deterministic_algorithms(True)
    config_hash = cfg.result_hash()
    cfg_dict = cfg.to_dict()
    segments = [provenance(device)]  # what this run ran on, outside its identity (argent/engine/provenance.py)

    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, cfg.variant.geometry).to(device)
    optimizer = build_optimizer(model, cfg.optim)
    scheduler = build_scheduler(optimizer, cfg.optim, cfg.train.steps)
    objective = Objective(cfg.variant)
    step, skipped = 0, 0
    earlier_counts: dict[str, Any] | None = None  # the data counts of the segments before a resume (the checkpoint's)

    if is_main:
        run.root.mkdir(parents=True, exist_ok=True)
        clean_stale(run)  # also promotes a finished staged run a kill left behind
    state, files = resume_state(run, resume, config_hash, device, is_main)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, skipped = int(state["step"]), int(state.get("skipped", 0))
        earlier_counts = state.get("data_counts")  # None in a checkpoint of before they were kept
        if earlier_counts is None and step >= cfg.train.steps:
            earlier_counts = _summary_counts(files, step)  # such a run's summary of the same steps keeps them
        set_rng_state(state["rng"])
        segments = merge_segments(list(state.get("provenance") or []), segments[-1])
        if is_main:
            _truncate_metrics(files.metrics, step)
            log.info("resumed %s at step %d", files.root, step)
        if step >= cfg.train.steps and files.summary.is_file():
            # Finished already: its summary (with the data counts of the passes that trained it) stays
            # as it is; re-writing it from a resumed stream that reads nothing would zero them.
            finished = read_json(files.summary)
            if finished.get("config_hash") == config_hash:
                log.info("%s: already finished at step %d with this config; nothing to do", files.root, step)
                if is_main and files != run:
                    promote(files, run)  # a staged run whose promotion was cut short: finish it
                ctx.cleanup()
                return finished if is_main else {}
    elif holds_a_run(run):
        # A fresh run into a folder that holds a run is staged until it has finished: whatever stops
        # it (a bad config, a NaN at step 3, a kill), the folder's earlier run stays whole.
        files = run.staging
        if is_main:
            # An unfinished staged re-run of another config, discarded (clean_stale promoted a finished one).
            shutil.rmtree(files.root, ignore_errors=True)
            files.root.mkdir(parents=True)
    if is_main:
        atomic_write_text(files.config, yaml.safe_dump(cfg_dict, sort_keys=False))

    encoder = ctx.wrap(BatchEncoder(model, cfg.variant.use_boxes))
    if cfg.train.compile:
        encoder = compile_step(encoder, "the towers")
    per_rank = cfg.train.batch_size // ctx.world_size
    if per_rank * ctx.world_size != cfg.train.batch_size:
        raise ConfigError(f"train.batch_size {cfg.train.batch_size} is not divisible by the world size {ctx.world_size}")
    stream = batches(step) if batches else _loader(cfg, per_rank, ctx, start_batch=step)

    tracker = Tracker(cfg.tracking.uri or default_tracking_uri(run.root),
                      cfg.tracking.experiment, f"{cfg.variant_name}-{cfg.size}-seed{cfg.seed}",
                      run_tags(cfg_dict, run.root, config_hash),
                      enabled=cfg.tracking.enabled and is_main, record=run.root / RUN_RECORD)
    if is_main:
        tracker.log_params(cfg_dict)
    synced = len(read_metrics(files.metrics)) if is_main else 0
    data_skips: dict[str, Any] = {}

    def save(at_step: int) -> None:
        nonlocal synced, data_skips
        # The run's data counts so far: the earlier segments' plus this one's (a collective under DDP:
        # every rank saves at the same steps). A segment that trained no step (resumed at the end) read
        # nothing of its own; its loader's counts made once per process repeat the earlier segment's.
        fresh = at_step > first_step or earlier_counts is None
        data_skips = add_counts(earlier_counts or {}, skip_counts(stream) if fresh else None)
        if not is_main:
            return
        atomic_torch_save({
            "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "step": at_step, "skipped": skipped, "rng": rng_state(), "config_hash": config_hash,
            "identity_version": IDENTITY_VERSION, "provenance": segments, "data_counts": data_skips,
        }, files.checkpoint)
        rows = read_metrics(files.metrics)
        tracker.log_metrics(rows[synced:])
        synced = len(rows)

    first_step = step
    progress = Progress(cfg.train.steps, step, enabled=is_main)
    model.train()
    t_last, n_last, wait_s = time.perf_counter(), 0, 0.0
    metrics_file = files.metrics.open("a") if is_main else None
    try:
        while step < cfg.train.steps:
            t_wait = time.perf_counter()
            batch = next(stream)
            wait_s += time.perf_counter() - t_wait
            logs_now = is_main and ((step + 1) % cfg.train.log_every == 0 or step + 1 == cfg.train.steps)
            if batch_hook:
                batch = batch_hook(step, batch)
            batch = to_device(batch, device)
            with autocast(cfg, device):
                emb, curv, scale = encoder(batch)
            hard = hard_negatives(emb, batch)
            out = objective(emb, curv=curv, logit_scale=scale, geometry=cfg.variant.geometry, hard=hard,
                            with_diagnostics=logs_now)
            bad = first_bad_term(out.total, out.terms)
            if bad is not None:
                if cfg.train.nan_policy == "skip" and skipped < cfg.train.max_skipped_steps:
                    skipped += 1
                    optimizer.zero_grad(set_to_none=True)
                    log.warning("step %d: loss term %r is not finite; step skipped (%d so far)", step, bad, skipped)
                    step += 1
                    scheduler.step()
                    continue
                last = f"{files.checkpoint} (step {_checkpoint_step(files.checkpoint)})" \
                    if files.checkpoint.exists() else "none (no checkpoint was written yet)"
                if files != run:
                    last += f"; the earlier run in {run.root} is untouched"
                raise TrainingDiverged(
                    f"step {step}: loss term {bad!r} is {out.terms.get(bad, out.total).detach().float().cpu().tolist()}; "
                    f"stopped with nothing written for this step. Last good checkpoint: {last}. "
                    f"Lower optim.lr, check the data, or set train.nan_policy: skip."
                )
            optimizer.zero_grad(set_to_none=True)
            out.total.backward()
            if cfg.optim.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
            optimizer.step()
            model.clamp_scalars_()  # bounds live on the stored scalars (docs in argent/models/dual_encoder.py)
            scheduler.step()
            step += 1
            n_last += cfg.train.batch_size

            if is_main and (step % cfg.train.log_every == 0 or step == cfg.train.steps):
                record = {"step": step, "lr": scheduler.get_last_lr()[0], "loss": out.total.item()}
                record.update({f"loss/{k}": v.item() for k, v in out.terms.items()})
                record.update(model.scalars())
                record["skipped_steps"] = skipped
                if step % cfg.train.diagnostics_every == 0 or step == cfg.train.steps:
                    with torch.no_grad():
                        record.update({f"diag/{k}": v for k, v in
                                       loss_diagnostics(emb, curv.detach(), cfg.variant).items()})
                        record.update({f"diag/{k}": v for k, v in out.diagnostics.items()})
                now = time.perf_counter()
                record[PERF_PREFIX + "samples_per_s"] = n_last / max(now - t_last, 1e-9)
                # Share of the window's wall time spent waiting for the loader (docs/throughput.md).
                record[PERF_PREFIX + "data_wait"] = wait_s / max(now - t_last, 1e-9)
                t_last, n_last, wait_s = now, 0, 0.0
                metrics_file.write(json.dumps(record) + "\n")
                metrics_file.flush()
                progress.update(step, record)
            else:
                progress.advance(step)
            if step % cfg.train.checkpoint_every == 0 and step < cfg.train.steps:
                save(step)
                if on_checkpoint and is_main:
                    model.eval()
                    with torch.no_grad():
                        on_checkpoint(step, model)
                    model.train()
            if step < cfg.train.steps and stop.agreed(device, ctx.world_size):
                if step % cfg.train.checkpoint_every:
                    save(step)
                if ctx.world_size > 1:
                    torch.distributed.barrier()  # no rank leaves before rank 0's checkpoint is on disk
                raise stop.stopped(f"stopped on {stop.received} at step {step} of {cfg.train.steps}, checkpoint "
                                   f"{files.checkpoint} written; {_continues(stop.received)} at step {step}", step)
        save(step)  # sets data_skips: bad samples by reason, all ranks, every segment (in the checkpoint too)
        if is_main:
            trained = step - (0 if earlier_counts else first_step)  # the counts' steps: every segment's if kept
            report_negatives_coverage(cfg, data_skips, trained * cfg.train.batch_size)
            metrics_file.close()
            metrics_file = None
            summary = {**run_summary(cfg, files, step, skipped, config_hash), **data_skips}
            tracker.log_metrics([{"step": step, **flatten(data_skips, sep="/")}])
            plot_curves(files)
            write_provenance(files, run_record(segments))
            atomic_write_text(files.summary, json.dumps(summary, indent=2))
            if files != run:  # the staged re-run has finished: only now does it replace the earlier run
                promote(files, run)
                files = run
            for path in (files.config, files.summary, files.curves, files.provenance):
                tracker.log_artifact(path)
            tracker.finish()
            return summary
        return {}
    except BaseException as err:
        if is_main:
            tracker.finish("KILLED" if isinstance(err, Preempted) else "FAILED")
        raise
    finally:
        stream = None  # the loader's workers ignore stop signals: shut them down in order now (preemption.py)
        if metrics_file:
            metrics_file.close()
        progress.close()
        ctx.cleanup()


def _continues(received: str | None) -> str:
    """Who continues a stopped run: the user's Ctrl-C is not retried by the workflow (preemption.py)."""
    if received == "SIGINT":
        return "`argent train --resume` (or the workflow, run again) continues"
    return "the workflow's retry (or `argent train --resume`) continues"


def report_negatives_coverage(cfg: ExperimentConfig, data_skips: dict[str, Any], trained: int) -> None:
    """One line when training samples had no hard negative, beside the share the miner itself found
    none for (its summary): a much larger share means the parquet was mined from other shards."""
    missing = (data_skips.get("dropped_samples") or {}).get("no_hard_negative", 0)
    if not missing or cfg.variant.hard_negatives == "none":
        return
    parquet = Path(negatives_config(cfg).negatives)
    mined = "unknown (no miner summary beside it)"
    try:
        record = read_json(summary_path(parquet))
        found = record["modes"][cfg.variant.hard_negatives]["negatives"]
        mined = f"{100 * (1 - found / max(record['captions'] - record['empty_captions'], 1)):.1f} %"
    except (ArgentError, KeyError, TypeError):  # absent or torn summary, or another layout
        pass
    log.warning("%d of the %d samples trained on (%.1f %%) had no hard negative in %s; the miner found none for "
                "%s of the captions it read. A much larger share here means the parquet was mined from other "
                "shards: re-run `argent mine` on data.train_shards", missing, trained,
                100 * missing / max(trained, 1), parquet, mined)


def _summary_counts(files: RunFolder, step: int) -> dict[str, Any] | None:
    """The data counts of the folder's summary.json when it is the summary of ``step`` (e.g. one left
    with a stale hash by a re-stamp whose summary write failed); None otherwise."""
    try:
        summary = read_json(files.summary) if files.summary.is_file() else None
    except ArgentError:
        return None
    if not isinstance(summary, dict) or summary.get("steps") != step:
        return None
    return {key: summary[key] for key in COUNT_KEYS if isinstance(summary.get(key), dict)} or None


def _checkpoint_step(path: Path) -> int:
    return int(read_checkpoint(path)["step"])


def _loader(cfg: ExperimentConfig, per_rank: int, ctx: dist_utils.DistContext, start_batch: int) -> Iterator[dict]:
    if not cfg.data.train_shards:
        raise ConfigError("data.train_shards: no training shards configured (a glob of .tar files)")
    return iter(train_loader(
        negatives_config(cfg), batch_size=per_rank, image_size=cfg.model.image_size, context_length=cfg.model.context_length,
        use_boxes=cfg.variant.use_boxes, seed=cfg.seed, rank=ctx.rank, world_size=ctx.world_size,
        num_workers=cfg.train.num_workers, start_batch=start_batch, shuffle_buffer=cfg.train.shuffle_buffer,
        negatives_mode=None if cfg.variant.hard_negatives == "none" else cfg.variant.hard_negatives,
        worker_init_fn=quiet_worker,
    ))


def negatives_config(cfg: ExperimentConfig) -> DataConfig:
    """The data config with ``negatives`` resolved to the parquet of the variant's slot mode.

    ``data.negatives`` may name the parquet itself or the folder ``argent mine`` writes
    (``train-<mode>.parquet`` per mode). A variant without hard negatives trains without them.
    """
    mode = cfg.variant.hard_negatives
    if mode == "none":
        return dataclasses.replace(cfg.data, negatives="")
    path = Path(cfg.data.negatives)
    if not cfg.data.negatives:
        raise ConfigError(f"variant {cfg.variant_name!r} uses hard_negatives: {mode}, but data.negatives is empty; "
                         f"mine them first (argent mine) and point data.negatives at the output folder")
    if path.is_dir():
        path = path / f"train-{mode}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: hard negatives for mode {mode!r} not found; run argent mine --mode {mode}")
    return dataclasses.replace(cfg.data, negatives=str(path))


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
