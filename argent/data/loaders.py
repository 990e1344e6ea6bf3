"""Training and evaluation loaders over the format readers.

Training (``train_loader``): an infinite, shuffled stream of batch dicts (contract: "image",
"text", "key"; with boxes "crop", "phrase"; with hard negatives "hard_text", "hard_concreteness",
"has_hard"). How it stays exactly reproducible and resumable:

- Shards are split by rank, then worker: worker role r of rank k reads ``shards[g::G]`` with
  g = k·W + r, G = world_size·W (W = max(1, num_workers)); fewer shards than G is an error.
- Each role builds its own stream: per epoch a seeded shard order, then records parsed and
  validated *without decoding images* (JSON, spans, boxes, image header; HyCoCLIP's crop rule),
  then a seeded shuffle buffer, then batches of B records, consecutive or in shape-contrast
  groups (``data.batching``, argent/data/batching.py). Batch boundaries therefore depend on the
  raw bytes only.
- Global batch b comes from role b mod W as its local batch b div W (DataLoader's round robin);
  a loader resumed at ``start_batch=k`` rotates roles so its first worker plays role k mod W, and
  each role skips its earlier batches as raw records, decoding nothing.
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

Evaluation: ``eval_image_loader`` (ordered images for classification/retrieval) and
``grounded_eval_batches`` (ordered grounded/plain shards; the crop is the first kept box).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, default_collate, get_worker_info

from argent.config import BatchingConfig, DataConfig
from argent.data.batching import record_batches
from argent.data.formats.grounded import (
    DEFAULT_MIN_BOX_AREA,
    GroundedRecord,
    crop_region,
    iter_records,
    parse_sample,
)
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
from argent.data.images import decode_image, eval_transform, load_image, pad_to_square, squeeze_transform
from argent.data.manifest import check_against_manifest, check_named_shards
from argent.data.memo import EpochMemo
from argent.data.policy import BATCH_COUNTS_KEY, BadDataError, BadDataPolicy, CountedBatches, resolve_policy
from argent.data.shards import expand_shards, iter_shard
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
        self.n_roles = max(1, num_workers)
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
        g = self.rank * self.n_roles + role
        shards = self.shards[g:: self.world_size * self.n_roles]
        self._cache = ImageCache(self.image_cache) if self.image_cache else None
        # A set small enough for the image cache is parsed once and, without augmentation, resized once.
        self._memo = EpochMemo(keep_records=self._cache is not None, keep_pixels=self._cache is not None and not self.augment)
        policy = BadDataPolicy(self.bad_data)  # type: ignore[arg-type]
        stream = self._shuffled(self._records(shards, g, policy), g)
        skip = _role_skip(self.start_batch, role, self.n_roles)
        for j, records in enumerate(record_batches(stream, self.batch_size, self.batching)):
            if j >= skip:
                # The running counts ride along to the trainer (CountedBatches takes them off).
                yield {**self._batch(records, j * self.n_roles + role, policy), BATCH_COUNTS_KEY: (g, policy.snapshot())}


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
    num_workers: int = 0,
    start_batch: int = 0,
    shuffle_buffer: int = 4000,
    negatives_mode: str | None = None,
    worker_init_fn: Callable[[int], None] | None = None,
) -> CountedBatches:
    """Infinite training batches (module doc); deterministic for fixed (seed, rank, world_size, num_workers).

    ``negatives_mode`` picks the rows of ``data_cfg.negatives`` (needed when the file holds
    several modes); ``shuffle_buffer`` is TrainConfig.shuffle_buffer; ``worker_init_fn`` runs in each
    worker process (the trainer's leaves the stop signals to the main process). ``data_cfg.image_cache``, when
    set and built from these shards, serves decoded images (the same batches, bit for bit).
    """
    if batch_size < 1 or image_size < 1 or not 0 <= rank < world_size or num_workers < 0 or start_batch < 0:
        raise ValueError(f"train_loader: bad arguments batch_size={batch_size} image_size={image_size} "
                         f"rank={rank} world_size={world_size} num_workers={num_workers} start_batch={start_batch}")
    if use_boxes and data_cfg.format != "grounded":
        raise BadDataError(f"data.format: {data_cfg.format!r} has no boxes, but the variant uses boxes; use grounded shards")
    shards = expand_shards(data_cfg.train_shards)
    n_streams = world_size * max(1, num_workers)
    if len(shards) < n_streams:
        raise BadDataError(
            f"{data_cfg.train_shards}: {len(shards)} shard(s) for {world_size} rank(s) × {max(1, num_workers)} "
            f"worker(s) = {n_streams} streams; every stream needs its own shard. Write more, smaller shards "
            "(e.g. argent synth --shard-size) or use fewer workers."
        )
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
        augment=data_cfg.augment, seed=seed, rank=rank, world_size=world_size, num_workers=num_workers,
        start_batch=start_batch, shuffle_buffer=shuffle_buffer, negatives=negatives, image_cache=str(cache_folder),
        batching=data_cfg.batching, decode_draft=data_cfg.decode_draft,
    )
    return CountedBatches(DataLoader(stream, batch_size=None, num_workers=num_workers,
                                     prefetch_factor=2 if num_workers else None, persistent_workers=False,
                                     worker_init_fn=worker_init_fn),
                          base=once_policy)


# ------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------


class ImagePaths(Dataset):
    """Map-style dataset of image files -> float32 (3,S,S); a bad file raises ``BadDataError``."""

    def __init__(self, paths: Sequence[str | Path], image_size: int, squeeze: bool = False) -> None:
        self.paths = [Path(p) for p in paths]
        self.transform = squeeze_transform(image_size) if squeeze else eval_transform(image_size)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.transform(load_image(self.paths[index]))


def eval_image_loader(
    paths: Sequence[str | Path], *, image_size: int, batch_size: int = 64, squeeze: bool = False, num_workers: int = 0
) -> DataLoader:
    """Ordered batches of float32 (B,3,S,S) images: Resize+CenterCrop, or a plain S×S resize when ``squeeze``."""
    return DataLoader(ImagePaths(paths, image_size, squeeze), batch_size=batch_size, shuffle=False,
                      num_workers=num_workers, drop_last=False)


def grounded_eval_batches(
    pattern: str | Path | Sequence[str | Path],
    *,
    batch_size: int,
    image_size: int,
    context_length: int,
    use_boxes: bool = True,
    min_box_area: int = DEFAULT_MIN_BOX_AREA,
    fmt: str = "grounded",
    policy: BadDataPolicy | None = None,
) -> Iterator[dict[str, Any]]:
    """Ordered batches (shards sorted, file order) of a grounded/plain set, eval transform, no shuffle.

    Same keys as training batches; the crop/phrase is each sample's first kept box. ``policy``
    collects the skipped samples, and the shards' differences from their data set's manifest
    (argent/data/manifest.py; compared before the first batch).
    """
    if use_boxes and fmt != "grounded":
        raise BadDataError(f"{pattern}: {fmt!r} shards have no boxes; pass use_boxes=False")
    policy = resolve_policy(policy)
    check_named_shards(pattern, policy)
    tf = eval_transform(image_size)
    chunk: list[tuple[GroundedRecord, Any]] = []

    def emit() -> dict[str, Any]:
        batch: dict[str, Any] = {
            "image": torch.stack([tf(pad_to_square(img) if fmt == "grounded" else img) for _, img in chunk]),
            "text": tokenize([r.caption for r, _ in chunk], context_length),
            "key": [r.key for r, _ in chunk],
        }
        if use_boxes:
            batch["crop"] = torch.stack([tf(crop_region(img, r.regions[0].box)) for r, img in chunk])
            batch["phrase"] = tokenize([r.regions[0].phrase for r, _ in chunk], context_length)
        return batch

    for record in iter_records(pattern, fmt=fmt, min_box_area=min_box_area, policy=policy):  # type: ignore[arg-type]
        try:
            image = decode_image(record.image_bytes, record.where)
        except BadDataError:
            policy.bad("corrupt_image", f"{record.where}: image does not decode")
            continue
        chunk.append((record, image))
        if len(chunk) == batch_size:
            yield emit()
            chunk = []
    if chunk:
        yield emit()
