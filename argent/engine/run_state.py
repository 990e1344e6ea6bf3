"""What the phases of a training run share (argent/engine/trainer.py): its folder, its model and
training state, what the step loop writes through; and the checkpoint: what it holds of that state
(``RunState.checkpoint``) and how a resume reads it back (``RunState.load``)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from typing import IO, Any

import torch

from argent.config import IDENTITY_VERSION, ExperimentConfig
from argent.engine import distributed as dist_utils
from argent.engine.checkpoint import rng_state, set_rng_state
from argent.engine.progress import Progress
from argent.engine.provenance import merge_segments
from argent.engine.summary import COUNT_KEYS
from argent.io import ArgentError, atomic_write_text, read_json
from argent.losses import Objective
from argent.models import DualEncoder
from argent.runs import RunFolder, read_metrics
from argent.tracking import Tracker

log = logging.getLogger("argent.train")


@dataclasses.dataclass
class RunState:
    """The trainer's ``_set_up`` fills the first fields, ``_resume`` the training state, ``_start_loop``
    what the loop trains and writes through. The batch stream is held here alone: the trainer drops it
    on the way out (its loader's workers shut down then, in order)."""

    cfg: ExperimentConfig
    run: RunFolder  # the run's folder
    files: RunFolder  # where this segment writes: ``run``, or its .staging/ until a re-run has finished
    ctx: dist_utils.DistContext
    config_hash: str
    cfg_dict: dict[str, Any]
    segments: list[dict[str, Any]]  # what each segment ran on, outside its identity (argent/engine/provenance.py)
    model: DualEncoder
    optimizer: torch.optim.Optimizer
    scheduler: Any
    objective: Objective
    step: int = 0
    skipped: int = 0
    earlier_counts: dict[str, Any] | None = None  # the data counts of the segments before a resume (the checkpoint's)
    first_step: int = 0  # the step this segment started at
    encoder: Any = None
    stream: Iterator[dict[str, Any]] | None = None
    tracker: Tracker | None = None
    synced: int = 0  # the metrics records the tracker has
    data_skips: dict[str, Any] = dataclasses.field(default_factory=dict)  # bad samples by reason, so far
    inputs: dict[str, Any] | None = None  # the fingerprints of the files it reads (argent/runs/fingerprint.py)
    progress: Progress | None = None
    metrics_file: IO[str] | None = None
    t_last: float = 0.0  # the metrics window: its start, the samples it trained, its seconds waiting for data
    n_last: int = 0
    wait_s: float = 0.0

    @property
    def device(self) -> torch.device:
        return self.ctx.device

    @property
    def is_main(self) -> bool:
        return self.ctx.rank == 0

    def checkpoint(self, at_step: int) -> dict[str, Any]:
        """The checkpoint of ``at_step``: everything an exact resume needs (``load`` reads it back)."""
        return {
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "step": at_step, "skipped": self.skipped, "rng": rng_state(),
            "config_hash": self.config_hash, "identity_version": IDENTITY_VERSION, "provenance": self.segments,
            "data_counts": self.data_skips, **({"inputs": self.inputs} if self.inputs else {}),
        }

    def load(self, state: dict[str, Any]) -> None:
        """A checkpoint into the run: weights, optimiser, scheduler, step, data counts, RNG states and
        provenance; rank 0 drops the metrics records written after it (they will be recomputed)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.skipped = int(state["step"]), int(state.get("skipped", 0))
        self.earlier_counts = state.get("data_counts")  # None in a checkpoint of before they were kept
        if self.earlier_counts is None and self.step >= self.cfg.train.steps:
            self.earlier_counts = _summary_counts(self.files, self.step)  # its summary of the same steps keeps them
        set_rng_state(state["rng"])
        self.segments = merge_segments(list(state.get("provenance") or []), self.segments[-1])
        if self.is_main:
            rows = [row for row in read_metrics(self.files.metrics) if row["step"] <= self.step]
            atomic_write_text(self.files.metrics, "".join(json.dumps(row) + "\n" for row in rows))
            log.info("resumed %s at step %d", self.files.root, self.step)


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
