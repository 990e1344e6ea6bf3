"""The training loader over the format readers.

Training (``train_loader``): an infinite, shuffled stream of batch dicts (contract: "image",
"text", "key"; with boxes "crop", "phrase"; with hard negatives "hard_text", "hard_concreteness",
"has_hard"). How it stays exactly reproducible and resumable:

- Shards are split by rank, then into S data streams (``train.data_streams``, part of the run's
  identity): stream s of rank k reads ``shards[g::G]`` with g = k·S + s, G = world_size·S; fewer
  shards than G is an error. The loader's workers only share out the streams, so the batches do
  not depend on ``num_workers``: W workers (the largest divisor of S that is at most
  ``num_workers``) each own the streams s ≡ r (mod W) of their role r.
- Each stream is built on its own: per epoch a seeded shard order, then records parsed and
  validated *without decoding images* (JSON, spans, boxes, image header; HyCoCLIP's crop rule),
  then a seeded shuffle buffer, then batches of B records, consecutive or in shape-contrast
  groups (``data.batching``, argent/data/batching.py). Batch boundaries therefore depend on the
  raw bytes only.
- Global batch b is stream b mod S's local batch b div S; it is made by role b mod W
  (DataLoader's round robin). A loader resumed at ``start_batch=k`` rotates roles so its first
  worker plays role k mod W, and each stream skips its earlier batches as raw records, decoding
  nothing.
- Every random draw after that (the box of each sample, RandomResizedCrop of image and crop) is
  seeded by (seed, rank, b, position in batch), independent of worker timing and of the caller's
  RNG (``torch.random.fork_rng``).
- An image whose header reads but whose pixels do not decode is dropped from its batch (the
  batch is one shorter; counted as ``corrupt_image``), so batch numbering never shifts.
- With an image cache (a set that fits in memory) each process parses a shard once and replays
  its records and bad-data notes on later passes, and without augmentation keeps each resized
  image and crop (argent/data/memo.py): the same batches and counts, without the repeated work.
- ``data.decode_draft`` decodes a JPEG at 1/2–1/8 of its size where no region needs the full size
  (image_cache.py: ``draft_factor``); it changes pixels, hence the run's identity. Off: the plain path.
Bad samples follow ``data_cfg.bad_data``; each worker logs its counts after every pass over its
shards, and a pass with nothing usable is an error. The counts also travel with the batches to
the trainer, which writes them to the run's ``summary.json`` (``argent.data.policy.skip_counts``).

The evaluation loaders (ordered, no shuffle) are argent/data/eval_loaders.py.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, default_collate, get_worker_info

from argent.config import BatchingConfig, DataConfig
from argent.data.batching import record_batches
from argent.data.formats.grounded import GroundedRecord, parse_sample
from argent.data.hard_negatives import HardNegatives
from argent.data.image_cache import (
    TRAIN_SCALE,
    ImageCache,
    augment,
    crop_pixels,
    draft_factor,
    draft_pixels,
    full_frame,
    open_cache,
    pad_square,
    resize_center,
    scale_box,
    to_float,
)
from argent.data.manifest import check_against_manifest
from argent.data.memo import EpochMemo
from argent.data.policy import BATCH_COUNTS_KEY, BadDataError, BadDataPolicy, CountedBatches
from argent.data.shards import iter_shard, training_shards
from argent.models.tokenizer import tokenize

log = logging.getLogger("argent.data")
_BUFFER_STREAM = 1_000_003  # distinct seed-sequence words for the shard order and the shuffle buffer
_ORDER_STREAM = 1_000_033


def _role_skip(start_batch: int, role: int, n_roles: int) -> int:
    """How many of its own batches role r skips to resume at global batch ``start_batch``."""
    return math.ceil((start_batch - role) / n_roles) if start_batch > role else 0


def _torch_seed(words: Sequence[int]) -> int:
    return int(np.random.SeedSequence(list(words)).generate_state(1, dtype=np.uint64)[0])


class TrainStream(IterableDataset):
    """The per-worker stream behind ``train_loader`` (see the module doc)."""

    def __init__(
        self,
        shards: list[Path],
        *,
        fmt: str,
        min_box_area: int,
        bad_data: str,
        batch_size: int,
        image_size: int,
        context_length: int,
        use_boxes: bool,
        augment: bool,
        seed: int,
        rank: int,
        world_size: int,
        data_streams: int,
        num_workers: int,
        start_batch: int,
        shuffle_buffer: int,
        negatives: HardNegatives | None,
        image_cache: str = "",
        batching: BatchingConfig | None = None,
        decode_draft: bool = False,
    ) -> None:
        super().__init__()
        self.decode_draft = decode_draft  # JPEG DCT-domain downscaling where no region needs the full size
        self.image_cache = image_cache  # a checked cache folder (image_cache.open_cache), or "" to decode
        self.shards = shards
        self.fmt = fmt
        self.min_box_area = min_box_area
        self.bad_data = bad_data
        self.batch_size = batch_size
        self.image_size = image_size
        self.context_length = context_length
        self.use_boxes = use_boxes
        self.augment = augment
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.n_streams = data_streams  # per rank; the batches depend on it
        self.n_roles = stream_workers(data_streams, num_workers)  # who makes them; they do not depend on it
        self.start_batch = start_batch
        self.shuffle_buffer = max(1, shuffle_buffer)
        self.negatives = negatives
        self.batching = batching or BatchingConfig()

    # -- raw stage (no image decode) ----------------------------------------------------------
    def _records(self, shards: list[Path], g: int, policy: BadDataPolicy) -> Iterator[tuple[int, GroundedRecord]]:
        """(epoch, record) forever: each epoch walks this stream's shards in a seeded order."""
        epoch = 0
        while True:
            order = np.random.default_rng([self.seed, g, _ORDER_STREAM, epoch]).permutation(len(shards))
            n_usable = 0
            for i in order:
                for record in self._memo.records(shards[i], policy, lambda p, shard=shards[i]: self._parse(shard, p)):
                    n_usable += 1
                    yield epoch, record
            policy.require_usable(n_usable, f"{[str(s) for s in shards]} (rank {self.rank}, stream {g})")
            if policy.counts or policy.dropped:
                log.warning("rank %d stream %d epoch %d: %s", self.rank, g, epoch, policy.report())
            epoch += 1

    def _parse(self, shard: Path, policy: BadDataPolicy) -> Iterator[GroundedRecord]:
        for sample in iter_shard(shard, policy):
            record = parse_sample(sample, self.fmt, min_box_area=self.min_box_area, policy=policy)  # type: ignore[arg-type]
            if record is not None:
                yield record

    def _shuffled(self, records: Iterator[tuple[int, GroundedRecord]], g: int) -> Iterator[GroundedRecord]:
        """A seeded shuffle buffer. It holds at most one epoch: a buffer larger than the stream
        would fill with copies of the same samples (and take many epochs to fill)."""
        rng = np.random.default_rng([self.seed, g, _BUFFER_STREAM])
        buffer: list[GroundedRecord] = []
        capacity = self.shuffle_buffer
        for epoch, record in records:
            if epoch > 0 and capacity > len(buffer):
                capacity = len(buffer)  # a whole epoch fitted: stop filling
            if len(buffer) < capacity:
                buffer.append(record)
                continue
            i = int(rng.integers(len(buffer)))
            buffer[i], record = record, buffer[i]
            yield record

    # -- decode stage ---------------------------------------------------------------------------
    def _transform(self, image: torch.Tensor, words: list[int], frame: tuple[int, int] | None = None) -> torch.Tensor:
        """A 3×H×W uint8 image -> (3, S, S): images.train_transform (seeded by ``words``; uint8 until
        ``_stack`` scales the whole batch at once) or eval_transform (``resize_center``, uint8 too), on the tensor path
        shared with the image cache (argent/data/image_cache.py)."""
        if not self.augment:
            return resize_center(image, self.image_size)
        return augment(image, self.image_size, TRAIN_SCALE, _torch_seed(words), frame)

    def _sample(self, record: GroundedRecord, base: list[int]) -> tuple[torch.Tensor, torch.Tensor | None, str | None]:
        """(image, crop, phrase) of one record at batch position ``base``; the box is drawn per visit,
        the pixels of each (record, box) come from the memo when it keeps them."""
        decoded: list[tuple[torch.Tensor, int]] = []
        # The reduction depends on the record alone (all its boxes), so memo-kept pixels never depend on the box drawn.
        factor = draft_factor(record.width, record.height, [r.box for r in record.regions] if self.use_boxes else [],
                              self.image_size, augment=self.augment, square=self.fmt == "grounded") if self.decode_draft else 1

        def pixels() -> torch.Tensor:  # decoded at most once per visit, and not at all on a memo hit
            if not decoded:
                decoded.append(draft_pixels(record, self._cache, factor))  # factor 1: record_pixels, unchanged
            return decoded[0][0]

        def crop(box: tuple[int, int, int, int]) -> torch.Tensor:
            image = pixels()
            return crop_pixels(image, scale_box(box, decoded[0][1], image.shape[2], image.shape[1]))

        def frame(box: tuple[int, int, int, int] | None = None) -> tuple[int, int] | None:
            return None if decoded[0][1] == 1 else full_frame(record, box, square=self.fmt == "grounded")

        square = pad_square if self.fmt == "grounded" else (lambda x: x)
        image = self._memo.pixels((record.where, -1), lambda: self._transform(square(pixels()), base + [1], frame()))
        if not self.use_boxes:
            return image, None, None
        k = int(np.random.default_rng(base + [0]).integers(len(record.regions)))
        box = record.regions[k].box
        crop_k = self._memo.pixels((record.where, k), lambda: self._transform(crop(box), base + [2], frame(box)))
        return image, crop_k, record.regions[k].phrase

    @staticmethod
    def _stack(images: list[torch.Tensor]) -> torch.Tensor:
        """uint8 images -> ``to_float`` of their stack, element for element. In a worker, default_collate
        writes the batch straight into shared memory, which the DataLoader would otherwise copy it to."""
        if any(image.dtype != torch.uint8 for image in images):
            return torch.stack(images)
        if get_worker_info() is None:
            return to_float(torch.stack(images))
        return default_collate([image.to(torch.float32) for image in images]).mul_(1.0 / 255)

    def _batch(self, records: list[GroundedRecord], b: int, policy: BadDataPolicy) -> dict[str, Any]:
        images, crops, texts, phrases, keys = [], [], [], [], []
        for i, record in enumerate(records):
            try:
                image, crop, phrase = self._sample(record, [self.seed, self.rank, b, i])
            except BadDataError:
                policy.bad("corrupt_image", f"{record.where}: image does not decode")
                continue
            if self.use_boxes:
                crops.append(crop)
                phrases.append(phrase)
            images.append(image)
            texts.append(record.caption)
            keys.append(record.key)
        if not keys:
            raise BadDataError(f"batch {b} (rank {self.rank}): no image decodes ({policy.report()})")
        batch: dict[str, Any] = {
            "image": self._stack(images),
            "text": tokenize(texts, self.context_length),
            "key": keys,
        }
        if self.use_boxes:
            batch["crop"] = self._stack(crops)
            batch["phrase"] = tokenize(phrases, self.context_length)
        if self.negatives is not None:
            found = [self.negatives.get(k) for k in keys]
            for key, hit in zip(keys, found):
                if hit is None:  # trained without a hard negative: counted (the miner may find none)
                    policy.drop("no_hard_negative", f"key {key} (not in {self.negatives.source})")
            batch["has_hard"] = torch.tensor([f is not None for f in found], dtype=torch.bool)
            # Rows without a negative get the empty text; the engine drops them via has_hard.
            batch["hard_text"] = tokenize([f[0] if f else "" for f in found], self.context_length)
            batch["hard_concreteness"] = torch.tensor([f[1] if f else 0.0 for f in found], dtype=torch.float32)
        return batch

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        worker = info.id if info is not None else 0
        role = (worker + self.start_batch) % self.n_roles  # resumed loaders rotate roles (module doc)
        self._cache = ImageCache(self.image_cache) if self.image_cache else None
        # A set small enough for the image cache is parsed once and, without augmentation, resized once.
        self._memo = EpochMemo(keep_records=self._cache is not None, keep_pixels=self._cache is not None and not self.augment)
        streams = {s: self._stream(s) for s in range(role, self.n_streams, self.n_roles)}
        # This worker makes global batches start + worker, + W, ...: consecutive batches of each stream it owns.
        for b in itertools.count(self.start_batch + worker, self.n_roles):
            g, policy, batches = streams[b % self.n_streams]
            # The running counts ride along to the trainer (CountedBatches takes them off).
            yield {**self._batch(next(batches), b, policy), BATCH_COUNTS_KEY: (g, policy.snapshot())}

    def _stream(self, s: int) -> tuple[int, BadDataPolicy, Iterator[list[GroundedRecord]]]:
        """Stream s of this rank: its number g, its bad-data counts, and its record batches from the
        first one at or after ``start_batch`` (the earlier ones skipped as raw records)."""
        g = self.rank * self.n_streams + s
        shards = self.shards[g:: self.world_size * self.n_streams]
        policy = BadDataPolicy(self.bad_data)  # type: ignore[arg-type]
        batches = record_batches(self._shuffled(self._records(shards, g, policy), g), self.batch_size, self.batching)
        skip = _role_skip(self.start_batch, s, self.n_streams)
        return g, policy, itertools.islice(batches, skip, None)


def stream_workers(data_streams: int, num_workers: int) -> int:
    """The loader's worker roles: the largest divisor of ``data_streams`` that is at most
    ``max(1, num_workers)``, so that every stream belongs to one worker."""
    return max(w for w in range(1, min(data_streams, max(1, num_workers)) + 1) if data_streams % w == 0)

def train_loader(
    data_cfg: DataConfig,
    *,
    batch_size: int,
    image_size: int,
    context_length: int,
    use_boxes: bool,
    seed: int,
    rank: int = 0,
    world_size: int = 1,
    data_streams: int = 1,
    num_workers: int = 0,
    start_batch: int = 0,
    shuffle_buffer: int = 4000,
    negatives_mode: str | None = None,
    worker_init_fn: Callable[[int], None] | None = None,
) -> CountedBatches:
    """Infinite training batches (module doc); deterministic for fixed (seed, rank, world_size,
    data_streams), whatever ``num_workers`` is (it only shares the streams out).

    ``negatives_mode`` picks the rows of ``data_cfg.negatives`` (needed when the file holds
    several modes); ``shuffle_buffer`` is TrainConfig.shuffle_buffer; ``worker_init_fn`` runs in each
    worker process (the trainer's leaves the stop signals to the main process). ``data_cfg.image_cache``, when
    set and built from these shards, serves decoded images (the same batches, bit for bit).
    """
    if (batch_size < 1 or image_size < 1 or not 0 <= rank < world_size or num_workers < 0 or start_batch < 0
            or data_streams < 1):
        raise ValueError(f"train_loader: bad arguments batch_size={batch_size} image_size={image_size} rank={rank} "
                         f"world_size={world_size} data_streams={data_streams} num_workers={num_workers} "
                         f"start_batch={start_batch}")
    shards = training_shards(data_cfg, use_boxes, world_size, data_streams)
    workers = stream_workers(data_streams, num_workers) if num_workers else 0
    if workers != num_workers:
        log.info("train.num_workers %d: %d loader worker(s) share the %d data stream(s) (a worker owns whole streams; "
                 "the batches are the same for any worker count)", num_workers, workers, data_streams)
    cache_folder = data_cfg.image_cache
    if cache_folder and open_cache(cache_folder, shards) is None:
        cache_folder = ""  # open_cache logged why
    # Counts made once here (shards missing or short against the data set's manifest, bad
    # hard-negative rows) join the run's skip counts; every rank makes the same ones, so only rank
    # 0's are kept, for the ranks' sum to be right (strict mode stops every rank alike).
    once_policy = BadDataPolicy(data_cfg.bad_data)
    counted = once_policy if rank == 0 else BadDataPolicy(data_cfg.bad_data)
    check_against_manifest(data_cfg.train_shards, shards, counted)
    negatives = None
    if data_cfg.negatives:
        negatives = HardNegatives.from_parquet(data_cfg.negatives, negatives_mode, counted)
    stream = TrainStream(
        shards, fmt=data_cfg.format, min_box_area=data_cfg.min_box_area, bad_data=data_cfg.bad_data,
        batch_size=batch_size, image_size=image_size, context_length=context_length, use_boxes=use_boxes,
        augment=data_cfg.augment, seed=seed, rank=rank, world_size=world_size, data_streams=data_streams,
        num_workers=workers,
        start_batch=start_batch, shuffle_buffer=shuffle_buffer, negatives=negatives, image_cache=str(cache_folder),
        batching=data_cfg.batching, decode_draft=data_cfg.decode_draft,
    )
    return CountedBatches(DataLoader(stream, batch_size=None, num_workers=workers,
                                     prefetch_factor=2 if workers else None, persistent_workers=False,
                                     worker_init_fn=worker_init_fn),
                          base=once_policy)

