"""Batch composition for training: plain stream order, or shape-contrast groups.

``mode: stream`` cuts the shuffled record stream into consecutive batches (the published setup).
``mode: grouped`` (``data.batching``; docs/hiershapes.md, "Shape-contrast batches") fills each
batch with groups of records whose captions differ only in their nouns: records share a *generic
key*, the caption with the head noun of each grounded phrase masked ("a small outlined red _ left
of a large solid blue _"), and the captions inside a group are distinct. A contrastive loss then
has to use the nouns (on hiershapes: the shapes) to tell a group apart; the losses are unchanged.

How a batch is filled, deterministically from the (already seeded) record order:

1. A pool holds ``pool_batches`` batches' worth of records, refilled from the stream in order.
2. Records that have waited ``max_wait`` batches are *due*: oldest first, each leaves with a group
   of its own key (itself plus distinct captions of that key, up to ``group_size``), or alone
   (no other caption of its key pooled, or its key already gave this batch a group).
3. The remaining slots take groups from the key with the most distinct captions (ties: the key
   whose oldest record arrived first), ``min(group_size, distinct captions, free slots)`` records
   each, the oldest record of each caption, while some key offers at least two distinct captions.
   A key gives at most one group per batch (a second would repeat its captions).
4. Slots still free take the oldest records of the pool (a mixed fill-up), those whose caption
   is not yet in the batch first.

Nothing is dropped: every record leaves within ``max_wait`` batches of entering the pool, and a
finite stream is flushed at its end. The batcher draws no random numbers; its output depends only
on the record order, so resume (skipping batches as raw records) and rank/worker splitting work
exactly as for the plain stream.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from argent.config import BatchingConfig
from argent.data.formats.grounded import GroundedRecord

MASK = "_"


def generic_key(caption: str, phrases: list[str] | tuple[str, ...]) -> str:
    """``caption`` with the head noun (last word) of each grounded phrase masked, lower-cased.

    A phrase that contains another phrase (a referring expression over several objects) is not a
    noun chunk of its own and is skipped; a phrase not found in the caption masks nothing.
    """
    text = " ".join(caption.lower().split())
    chunks = [" ".join(p.lower().split()) for p in phrases]
    chunks = [p for p in chunks if p and not any(q != p and f" {q} " in f" {p} " for q in chunks)]
    for phrase in sorted(set(chunks), key=len, reverse=True):
        words = phrase.split(" ")
        masked = " ".join(words[:-1] + [MASK])
        text = re.sub(rf"(?<![\w]){re.escape(phrase)}(?![\w])", masked, text)
    return text


@dataclass
class _Entry:
    order: int  # arrival index in the stream
    batch: int  # batch number at arrival
    record: GroundedRecord


@dataclass
class _Group:
    """The pooled records of one generic key, by caption, each caption's records oldest first."""

    by_caption: OrderedDict[str, list[_Entry]] = field(default_factory=OrderedDict)

    def oldest(self) -> int:
        return min(entries[0].order for entries in self.by_caption.values())


class GroupedBatcher:
    """Cuts an iterator of records into batches of shape-contrast groups (module doc)."""

    def __init__(self, batch_size: int, cfg: BatchingConfig) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.group_size = cfg.group_size
        self.capacity = max(batch_size, cfg.pool_batches * batch_size)
        self.max_wait = cfg.max_wait
        self._groups: dict[str, _Group] = {}
        self._n = 0  # records in the pool
        self._order = 0
        self._batch = 0

    # -- pool -------------------------------------------------------------------------------------
    def _add(self, record: GroundedRecord) -> None:
        key = generic_key(record.caption, [r.phrase for r in record.regions])
        group = self._groups.setdefault(key, _Group())
        group.by_caption.setdefault(record.caption, []).append(_Entry(self._order, self._batch, record))
        self._order += 1
        self._n += 1

    def _take(self, key: str, n: int, first: str | None = None) -> list[GroundedRecord]:
        """Up to ``n`` records of ``key`` with distinct captions: ``first``'s caption, then the
        captions whose oldest record is oldest."""
        group = self._groups[key]
        captions = sorted(group.by_caption, key=lambda c: group.by_caption[c][0].order)
        if first is not None:
            captions.remove(first)
            captions.insert(0, first)
        out = []
        for caption in captions[:n]:
            entries = group.by_caption[caption]
            out.append(entries.pop(0).record)
            if not entries:
                del group.by_caption[caption]
        if not group.by_caption:
            del self._groups[key]
        self._n -= len(out)
        return out

    def _oldest_entries(self) -> list[tuple[_Entry, str]]:
        return sorted(((e, k) for k, g in self._groups.items() for es in g.by_caption.values() for e in es),
                      key=lambda item: item[0].order)

    def _next_batch(self, size: int) -> list[GroundedRecord]:
        batch: list[GroundedRecord] = []
        used: set[str] = set()  # one group per key and batch: two would repeat captions
        # 2. due records leave first, each with a group of its own key.
        for entry, key in self._oldest_entries():
            if self._batch - entry.batch < self.max_wait or len(batch) >= size:
                break
            group = self._groups.get(key)
            if group is None or entry.record.caption not in group.by_caption \
                    or group.by_caption[entry.record.caption][0] is not entry:
                continue  # already taken with an earlier due record's group
            n = 1 if key in used else min(self.group_size, size - len(batch))  # a second group of a key: itself only
            batch += self._take(key, n, first=entry.record.caption)
            used.add(key)
        # 3. groups from the keys with the most distinct captions.
        while size - len(batch) >= 2:
            best = max((k for k in self._groups if k not in used),
                       key=lambda k: (len(self._groups[k].by_caption), -self._groups[k].oldest()), default=None)
            if best is None or len(self._groups[best].by_caption) < 2:
                break
            batch += self._take(best, min(self.group_size, size - len(batch)))
            used.add(best)
        # 4. mixed fill-up, oldest first, captions not yet in the batch before repeated ones.
        present = {r.caption for r in batch}
        fresh, repeated = [], []
        for item in self._oldest_entries():
            caption = item[0].record.caption
            (repeated if caption in present else fresh).append(item)
            present.add(caption)
        for entry, key in (fresh + repeated)[: size - len(batch)]:
            batch += self._take(key, 1, first=entry.record.caption)
        self._batch += 1
        return batch

    def batches(self, records: Iterator[GroundedRecord]) -> Iterator[list[GroundedRecord]]:
        """Batches of ``batch_size`` records; a finite ``records`` is flushed at its end (the last
        batch may be shorter)."""
        exhausted = False
        while True:
            while not exhausted and self._n < self.capacity:
                try:
                    self._add(next(records))
                except StopIteration:
                    exhausted = True
            if self._n == 0:
                return
            yield self._next_batch(min(self.batch_size, self._n))


def record_batches(records: Iterator[GroundedRecord], batch_size: int, cfg: BatchingConfig) -> Iterator[list[GroundedRecord]]:
    """Training batches of records under ``cfg.mode`` (module doc)."""
    if cfg.mode == "grouped":
        yield from GroupedBatcher(batch_size, cfg).batches(records)
        return
    while True:
        batch = [record for _, record in zip(range(batch_size), records)]
        if not batch:
            return
        yield batch
