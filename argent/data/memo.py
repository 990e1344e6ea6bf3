"""What the training loader keeps between epochs of a small training set (docs/throughput.md).

A run of the embedded default passes over its 10,000 hiershapes scenes about four times. Without
augmentation every pass repeats the same deterministic work per record: read the tar member, parse
and validate its JSON and image header, look the pixels up in the image cache, resize the image and
the crop of each box. ``EpochMemo`` does that work once per process and replays it:

- ``records(shard, parse)``: the first pass over a shard runs ``parse(policy)`` (a generator of
  records) with a ``RecordingPolicy`` that counts as usual and also notes each bad or dropped sample
  in order; later passes replay the same records and the same notes in the same order, so the
  bad-data counts attached to every batch are what a fresh parse gives, record by record.
- ``pixels(key, make)``: a transformed image (whole image or one box's crop) by record and role;
  only for deterministic transforms (no augmentation), where a repeat is the same uint8 tensor.

The loader uses it only with an image cache (``data.image_cache``), which is itself only for sets
that fit in memory; it holds the parsed records (with their encoded image bytes) and the resized
uint8 images, e.g. about 30 + 70 MB for hiershapes at 32 px. Same batches, bit for bit, with and
without it (tests/unit/data/test_cache.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import torch

from argent.data.formats.grounded import GroundedRecord
from argent.data.policy import BadDataPolicy

_BAD, _DROP = "bad", "drop"


class RecordingPolicy:
    """A ``BadDataPolicy`` stand-in that forwards every call and keeps each bad/dropped note in order."""

    def __init__(self, policy: BadDataPolicy, notes: list[Any]) -> None:
        self._policy, self._notes = policy, notes

    def bad(self, reason: str, where: str) -> None:
        self._policy.bad(reason, where)  # raises in strict mode before anything is noted
        self._notes.append((_BAD, reason, where))

    def drop(self, reason: str, where: str = "") -> None:
        self._policy.drop(reason, where)
        self._notes.append((_DROP, reason, where))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)


class EpochMemo:
    """Per-process memo of a training stream's parsed shards and resized pixels (module doc)."""

    def __init__(self, *, keep_records: bool, keep_pixels: bool) -> None:
        self.keep_records, self.keep_pixels = keep_records, keep_pixels
        self._shards: dict[Path, list[Any]] = {}
        self._pixels: dict[Hashable, torch.Tensor] = {}

    def records(self, shard: Path, policy: BadDataPolicy,
                parse: Callable[[Any], Iterator[GroundedRecord]]) -> Iterator[GroundedRecord]:
        """The shard's usable records in file order, with the bad-data notes applied to ``policy``
        at the same points as a fresh ``parse(policy)``; parsed once, replayed afterwards."""
        if not self.keep_records:
            yield from parse(policy)
            return
        items = self._shards.get(shard)
        if items is None:
            items = []
            recorder = RecordingPolicy(policy, items)
            for record in parse(recorder):
                items.append(record)
                yield record
            self._shards[shard] = items  # only a whole pass is kept: a pass cut short parses again
            return
        for item in items:
            if isinstance(item, GroundedRecord):
                yield item
            elif item[0] == _BAD:
                policy.bad(item[1], item[2])
            else:
                policy.drop(item[1], item[2])

    def pixels(self, key: Hashable, make: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``make()``, computed once per ``key`` when pixels are kept (deterministic transforms only)."""
        if not self.keep_pixels:
            return make()
        found = self._pixels.get(key)
        if found is None:
            found = self._pixels[key] = make()
        return found
