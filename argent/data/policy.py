"""What a reader does with a bad sample: skip it and count it by reason, or stop (strict).

Bad data is a missing or corrupt image, malformed JSON, an empty caption, a box outside its image,
a span outside its caption, ... Every reader takes a ``BadDataPolicy``:

- ``skip`` (default): the sample is dropped, ``counts[reason]`` goes up by one and the first place
  each reason was seen is kept for the report;
- ``strict``: the first bad sample raises ``BadDataError`` naming its file, row and key.

``drop(reason)`` counts a sample that a *rule* removes (e.g. HyCoCLIP's crop rule keeps no box); it is
reported with the rest but never raises, because the data is not broken.
A data set with nothing usable is always an error (``require_usable``).

Training streams run in loader workers (other processes): each attaches its policy's running
counts to the batches it yields (``BATCH_COUNTS_KEY``), and ``CountedBatches`` takes them off again
on the trainer's side, so ``skip_counts`` can sum them over streams and ranks for the run's summary.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from argent.io import ArgentError

Mode = Literal["skip", "strict"]
MODES: tuple[str, ...] = ("skip", "strict")


class BadDataError(ArgentError, ValueError):
    """Bad input data; the message names the file, row or key and what to do."""


class BadDataPolicy:
    """Skip-and-count or stop-at-first handling of bad samples.

    >>> policy = BadDataPolicy("skip")
    >>> policy.bad("empty_caption", "train/shard-000000.tar: row 3 (key a)")
    >>> policy.counts
    {'empty_caption': 1}
    """

    def __init__(self, mode: Mode = "skip") -> None:
        if mode not in MODES:
            raise ValueError(f"bad_data: {mode!r} is not allowed; allowed: {list(MODES)}")
        self.mode: Mode = mode
        self._bad: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()
        self._first: dict[str, str] = {}

    # -- recording ---------------------------------------------------------------------------
    def bad(self, reason: str, where: str) -> None:
        """A broken sample: count it (skip) or raise ``BadDataError`` naming ``where`` (strict)."""
        if self.mode == "strict":
            raise BadDataError(
                f"{where}: {reason.replace('_', ' ')}. Fix or remove this sample, or set "
                f"bad_data: skip to skip and count such samples."
            )
        self._bad[reason] += 1
        self._first.setdefault(reason, where)

    def drop(self, reason: str, where: str = "") -> None:
        """A sample removed by a data rule (not broken): counted in both modes, never raises."""
        self._dropped[reason] += 1
        if where:
            self._first.setdefault(reason, where)

    def merge(self, other: BadDataPolicy) -> None:
        """Add ``other``'s counts (e.g. from a loader worker) to this policy."""
        self._bad.update(other._bad)
        self._dropped.update(other._dropped)
        for reason, where in other._first.items():
            self._first.setdefault(reason, where)

    # -- reading -----------------------------------------------------------------------------
    @property
    def counts(self) -> dict[str, int]:
        """Skipped bad samples by reason."""
        return dict(sorted(self._bad.items()))

    @property
    def dropped(self) -> dict[str, int]:
        """Samples removed by a data rule, by reason."""
        return dict(sorted(self._dropped.items()))

    @property
    def total(self) -> int:
        return sum(self._bad.values())

    def report(self) -> str:
        """One line: every reason with its count and the first place it was seen."""
        if not self._bad and not self._dropped:
            return "no sample skipped"
        parts = []
        for label, counter in (("skipped (bad data)", self._bad), ("dropped by rule", self._dropped)):
            if counter:
                items = ", ".join(
                    f"{reason} {n}" + (f" (first: {self._first[reason]})" if reason in self._first else "")
                    for reason, n in sorted(counter.items())
                )
                parts.append(f"{label}: {items}")
        return "; ".join(parts)

    def snapshot(self) -> dict[str, dict[str, int]]:
        """The counts so far, as plain data (they cross a loader worker's process boundary)."""
        return {"skipped": self.counts, "dropped": self.dropped}

    def require_usable(self, n_usable: int, what: str) -> None:
        """A data set with nothing usable is an error, whatever the mode."""
        if n_usable <= 0:
            raise BadDataError(f"{what}: nothing usable ({self.report()}); check the path and the data")

    def __repr__(self) -> str:
        return f"BadDataPolicy({self.mode!r}, counts={self.counts}, dropped={self.dropped})"


def mark_partial(result: dict[str, Any], policy: BadDataPolicy, what: str, logger: logging.Logger,
                 degraded: Sequence[str] = ()) -> dict[str, Any]:
    """Say in ``result`` whether it was computed from fewer items than its input holds, or is
    degraded another way: sets ``result["partial"]`` (True when ``policy`` skipped any bad item,
    which only skip mode can do, or when ``degraded`` names a reason, kept in ``result["degraded"]``)
    and logs one ``PARTIAL result`` warning per cause naming ``what``. Evaluation, probe and cleaning
    results all go through here, so the flag and the log line read the same everywhere."""
    result["partial"] = policy.total > 0 or bool(degraded)
    if policy.total:
        logger.warning("%s: PARTIAL result, %d bad item(s) skipped: %s", what, policy.total, policy.report())
    if degraded:
        result["degraded"] = list(degraded)
        for reason in degraded:
            logger.warning("%s: PARTIAL result, degraded: %s", what, reason)
    return result


def resolve_policy(policy: BadDataPolicy | None) -> BadDataPolicy:
    """``None`` means the default: a fresh skip-and-count policy."""
    return policy if policy is not None else BadDataPolicy("skip")


# ---- training: counts from every loader stream, for the run's summary ------------------------------

BATCH_COUNTS_KEY = "_bad_data"  # (stream id, BadDataPolicy.snapshot()) on each raw training batch


class CountedBatches:
    """The training loader as the trainer sees it: batches without ``BATCH_COUNTS_KEY``.

    Every iterator (``iter(...)``) keeps the latest snapshot of each stream it saw; a stream's
    counts only grow, so the latest is that stream's total so far. ``base`` holds counts made once
    in this process (e.g. the hard-negative table's bad rows) and is added to every iterator's.
    """

    def __init__(self, loader: Iterable[dict[str, Any]], base: BadDataPolicy | None = None) -> None:
        self.loader = loader
        self.base = base

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return _CountingIterator(iter(self.loader), self.base)


class _CountingIterator:
    def __init__(self, batches: Iterator[dict[str, Any]], base: BadDataPolicy | None) -> None:
        self._batches = batches
        self._latest: dict[Any, dict[str, dict[str, int]]] = {}
        if base is not None:
            self._latest["base"] = base.snapshot()

    def __iter__(self) -> _CountingIterator:
        return self

    def __next__(self) -> dict[str, Any]:
        batch = next(self._batches)
        stream, snapshot = batch.pop(BATCH_COUNTS_KEY, (None, None))
        if snapshot is not None:
            self._latest[stream] = snapshot
        return batch

    def totals(self) -> dict[str, dict[str, int]]:
        return _sum_snapshots(self._latest.values())


def _sum_snapshots(snapshots: Iterable[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    total: dict[str, Counter[str]] = {"skipped": Counter(), "dropped": Counter()}
    for snap in snapshots:
        for kind in total:
            total[kind].update(snap.get(kind) or {})
    return {kind: dict(sorted(c.items())) for kind, c in total.items()}


def skip_counts(batches: Iterator[dict[str, Any]]) -> dict[str, dict[str, int]] | None:
    """``{"skipped_samples": {reason: n}, "dropped_samples": {reason: n}}`` for a run's summary,
    summed over the loader streams of this process and, under torch.distributed, over all ranks
    (a collective then: every rank must call it). None when ``batches`` does not count (a batch
    source other than ``train_loader``).

    Counted as the streams read: the shuffle buffer reads ahead of training, every pass over the
    shards counts its bad samples again, and a resumed run counts from its restart (its streams
    re-read the raw records of the batches they skip, so raw-record reasons are counted for those
    too; images are only decoded, and ``corrupt_image`` counted, for the batches trained on).
    """
    if not isinstance(batches, _CountingIterator):
        return None
    import torch.distributed as dist  # heavy, and only the trainer's: the readers stay torch-free

    local = batches.totals()
    if dist.is_available() and dist.is_initialized():
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, local)
        local = _sum_snapshots(gathered)
    return {"skipped_samples": local["skipped"], "dropped_samples": local["dropped"]}
