"""What the phases of a training run share (argent/engine/trainer.py), in the parts each phase fills: the run and
its folder (``RunState``, from ``_set_up``), what a step updates (``Learner``), where the run is and what it read
(``Counters``, from ``_resume`` and the steps), what the loop trains and writes through (``Loop``, from
``_start_loop``); and the checkpoint: what it holds of that state (``RunState.checkpoint``) and how a resume reads
it back (``RunState.load``)."""

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
class Learner:
    """What a training step updates, and a checkpoint holds of the model: the model, its optimiser and scheduler,
    and the objective it is trained on."""

    model: DualEncoder
    optimizer: torch.optim.Optimizer
    scheduler: Any
    objective: Objective


@dataclasses.dataclass
class Counters:
    """Where the run is and what it read: its step, the steps skipped, the step this segment started at, the data
    counts of the segments before a resume (the checkpoint's) and so far (bad samples by reason), the fingerprints
    of the files it reads (argent/runs/fingerprint.py)."""

    step: int = 0
    skipped: int = 0
    first_step: int = 0
    earlier_counts: dict[str, Any] | None = None
    data_skips: dict[str, Any] = dataclasses.field(default_factory=dict)
    inputs: dict[str, Any] | None = None


@dataclasses.dataclass
class Loop:
    """What the step loop trains and writes through: the (wrapped, compiled) towers, the batch stream (held here
    alone: the trainer drops it on the way out, so its loader's workers shut down in order), the tracker and the
    metrics records it has, the progress line, rank 0's metrics file, and the window of the next metrics record
    (its start, the samples it trained, its seconds waiting for data)."""

    encoder: Any = None
    stream: Iterator[dict[str, Any]] | None = None
    tracker: Tracker | None = None
    synced: int = 0
    progress: Progress | None = None
    metrics_file: IO[str] | None = None
    t_last: float = 0.0
    n_last: int = 0
    wait_s: float = 0.0


@dataclasses.dataclass
class RunState:
    """One run being trained: its config and identity, its folder, where this segment writes (``files``: the folder,
    or its .staging/ until a re-run has finished), the process group, what each segment ran on (outside its
    identity, argent/engine/provenance.py), and the parts above."""

    cfg: ExperimentConfig
    run: RunFolder
    files: RunFolder
    ctx: dist_utils.DistContext
    config_hash: str
    cfg_dict: dict[str, Any]
    segments: list[dict[str, Any]]
    learner: Learner
    counters: Counters = dataclasses.field(default_factory=Counters)
    loop: Loop = dataclasses.field(default_factory=Loop)

    @property
    def device(self) -> torch.device:
        return self.ctx.device

    @property
    def is_main(self) -> bool:
        return self.ctx.rank == 0

    def checkpoint(self, at_step: int) -> dict[str, Any]:
        """The checkpoint of ``at_step``: everything an exact resume needs (``load`` reads it back)."""
        learner, counters = self.learner, self.counters
        return {
            "model": learner.model.state_dict(), "optimizer": learner.optimizer.state_dict(),
            "scheduler": learner.scheduler.state_dict(), "step": at_step, "skipped": counters.skipped,
            "rng": rng_state(), "config_hash": self.config_hash, "identity_version": IDENTITY_VERSION,
            "provenance": self.segments, "data_counts": counters.data_skips,
            **({"inputs": counters.inputs} if counters.inputs else {}),
        }

    def load(self, state: dict[str, Any]) -> None:
        """A checkpoint into the run: weights, optimiser, scheduler, step, data counts, RNG states and
        provenance; rank 0 drops the metrics records written after it (they will be recomputed)."""
        learner, counters = self.learner, self.counters
        learner.model.load_state_dict(state["model"])
        learner.optimizer.load_state_dict(state["optimizer"])
        learner.scheduler.load_state_dict(state["scheduler"])
        counters.step, counters.skipped = int(state["step"]), int(state.get("skipped", 0))
        counters.earlier_counts = state.get("data_counts")  # None in a checkpoint of before they were kept
        if counters.earlier_counts is None and counters.step >= self.cfg.train.steps:
            counters.earlier_counts = _summary_counts(self.files, counters.step)  # its summary of the same steps
        set_rng_state(state["rng"])
        self.segments = merge_segments(list(state.get("provenance") or []), self.segments[-1])
        if self.is_main:
            rows = [row for row in read_metrics(self.files.metrics) if row["step"] <= counters.step]
            atomic_write_text(self.files.metrics, "".join(json.dumps(row) + "\n" for row in rows))
            log.info("resumed %s at step %d", self.files.root, counters.step)


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
