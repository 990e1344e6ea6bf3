"""One training step's pieces, shared by the loop, the benchmarks and the DDP tests: both towers
over a batch in one call per modality (``encode_batch``/``BatchEncoder``), optional ``torch.compile``
with a logged fallback, the NaN guard with a single host sync, and mixed precision; and what the trainer's
step loop (argent/engine/trainer.py) does with a step's loss: ``train.nan_policy`` (``skip_or_stop``), the
update (``update``) and rank 0's metrics record (``write_metrics_record``)."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import torch

from argent.config import ExperimentConfig
from argent.engine.run_state import RunState
from argent.engine.summary import PERF_PREFIX
from argent.io import ArgentError
from argent.losses.objective import diagnostics as loss_diagnostics
from argent.models import DualEncoder
from argent.runs import read_checkpoint

log = logging.getLogger("argent.train")

EMBED_KEYS = {"image": "image", "crop": "image", "text": "text", "phrase": "text", "hard_text": "text"}


def encode_batch(model: DualEncoder, batch: dict[str, Any], use_boxes: bool) -> dict[str, torch.Tensor]:
    """Lifted embeddings of every item type present in the batch, one tower call per modality."""
    images = [k for k in ("image", "crop") if k in batch and (k == "image" or use_boxes)]
    texts = [k for k in ("text", "phrase", "hard_text") if k in batch and (k != "phrase" or use_boxes)]
    out: dict[str, torch.Tensor] = {}
    if images:
        feats = model.encode_image(torch.cat([batch[k] for k in images]))
        out.update(zip(images, feats.chunk(len(images))))
    if texts:
        feats = model.encode_text(torch.cat([batch[k] for k in texts]))
        out.update(zip(texts, feats.chunk(len(texts))))
    return out


class BatchEncoder(torch.nn.Module):
    """batch -> (embeddings, c, s). Under DDP every parameter must be used inside the wrapped
    forward (that is where DDP hooks its gradient reduction), so the scalars are read here too."""

    def __init__(self, model: DualEncoder, use_boxes: bool) -> None:
        super().__init__()
        self.model = model
        self.use_boxes = use_boxes

    def forward(self, batch: dict[str, Any]) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        return encode_batch(self.model, batch, self.use_boxes), self.model.curv(), self.model.logit_scale()


def compile_step(fn: Callable, label: str = "the training step") -> Callable:
    """``torch.compile(fn)`` (inductor), falling back to ``fn`` itself, with a logged reason, when
    compilation is unavailable or fails on the first call. The fallback is decided once: later calls
    never mix compiled and eager results."""
    try:
        compiled = torch.compile(fn)
    except Exception as err:  # noqa: BLE001 - any failure to set up compilation means: run eagerly
        log.warning("train.compile: torch.compile unavailable for %s (%s: %s); running eagerly", label,
                    type(err).__name__, err)
        return fn
    chosen: list[Callable] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        if chosen:
            return chosen[0](*args, **kwargs)
        try:
            result = compiled(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - inductor/dynamo errors have no common base class
            log.warning("train.compile: compiling %s failed (%s: %s); running eagerly", label,
                        type(err).__name__, str(err).splitlines()[0] if str(err) else "")
            chosen.append(fn)
            return fn(*args, **kwargs)
        chosen.append(compiled)
        return result

    return run


def to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def hard_negatives(emb: dict[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    if "hard_text" not in emb:
        return None
    return {"text": emb.pop("hard_text"), "concreteness": batch["hard_concreteness"], "mask": batch["has_hard"]}


def first_bad_term(total: torch.Tensor, terms: dict[str, torch.Tensor]) -> str | None:
    # One host sync for the common, all-finite case; the per-term search only when something is not.
    if bool(torch.isfinite(torch.stack([total.detach().float().reshape(())] +
                                       [v.detach().float().reshape(-1).sum() for v in terms.values()])).all()):
        return None
    for name, value in terms.items():
        if not torch.isfinite(value).all():
            return name
    return None if torch.isfinite(total).all() else "total"


def autocast(cfg: ExperimentConfig, device: torch.device) -> contextlib.AbstractContextManager:
    if cfg.train.precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


# ---- what the trainer's loop does with a step's loss ----------------------------------------------------------


class TrainingDiverged(ArgentError, RuntimeError):
    """A loss term became NaN/inf; the message names the step, the term and the last good checkpoint."""


def skip_or_stop(r: RunState, out: Any) -> bool:
    """train.nan_policy on a loss term that is not finite: the step skipped (``skip``, within
    train.max_skipped_steps: True), else ``TrainingDiverged`` naming the last good checkpoint.
    False: the loss is finite."""
    bad = first_bad_term(out.total, out.terms)
    if bad is None:
        return False
    counters, learner = r.counters, r.learner
    if r.cfg.train.nan_policy == "skip" and counters.skipped < r.cfg.train.max_skipped_steps:
        counters.skipped += 1
        learner.optimizer.zero_grad(set_to_none=True)
        log.warning("step %d: loss term %r is not finite; step skipped (%d so far)", counters.step, bad,
                    counters.skipped)
        counters.step += 1
        learner.scheduler.step()
        return True
    last = f"{r.files.checkpoint} (step {int(read_checkpoint(r.files.checkpoint)['step'])})" \
        if r.files.checkpoint.exists() else "none (no checkpoint was written yet)"
    if r.files != r.run:
        last += f"; the earlier run in {r.run.root} is untouched"
    raise TrainingDiverged(
        f"step {counters.step}: loss term {bad!r} is {out.terms.get(bad, out.total).detach().float().cpu().tolist()}; "
        f"stopped with nothing written for this step. Last good checkpoint: {last}. "
        f"Lower optim.lr, check the data, or set train.nan_policy: skip."
    )


def update(r: RunState, out: Any) -> None:
    """Backward, the clipped gradient, the optimiser's and the scheduler's step: one step trained."""
    learner = r.learner
    learner.optimizer.zero_grad(set_to_none=True)
    out.total.backward()
    if r.cfg.optim.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(learner.model.parameters(), r.cfg.optim.grad_clip)
    learner.optimizer.step()
    learner.model.clamp_scalars_()  # bounds live on the stored scalars (docs in argent/models/dual_encoder.py)
    learner.scheduler.step()
    r.counters.step += 1
    r.loop.n_last += r.cfg.train.batch_size


def write_metrics_record(r: RunState, out: Any, emb: Any, curv: torch.Tensor) -> None:
    """Rank 0's metrics record of the step just trained: losses, scalars, diagnostics, throughput."""
    cfg, step, loop, learner = r.cfg, r.counters.step, r.loop, r.learner
    record = {"step": step, "lr": learner.scheduler.get_last_lr()[0], "loss": out.total.item()}
    record.update({f"loss/{k}": v.item() for k, v in out.terms.items()})
    record.update(learner.model.scalars())
    record["skipped_steps"] = r.counters.skipped
    if step % cfg.train.diagnostics_every == 0 or step == cfg.train.steps:
        with torch.no_grad():
            record.update({f"diag/{k}": v for k, v in loss_diagnostics(emb, curv.detach(), cfg.variant).items()})
            record.update({f"diag/{k}": v for k, v in out.diagnostics.items()})
    now = time.perf_counter()
    record[PERF_PREFIX + "samples_per_s"] = loop.n_last / max(now - loop.t_last, 1e-9)
    # Share of the window's wall time spent waiting for the loader (docs/throughput.md).
    record[PERF_PREFIX + "data_wait"] = loop.wait_s / max(now - loop.t_last, 1e-9)
    loop.t_last, loop.n_last, loop.wait_s = now, 0, 0.0
    loop.metrics_file.write(json.dumps(record) + "\n")
    loop.metrics_file.flush()
    loop.progress.update(step, record)
