"""Evaluation loaders over the format readers: ordered, no shuffle, the eval transform.

``eval_image_loader``: ordered images for classification and retrieval. ``grounded_eval_batches``:
ordered grounded/plain shards, with the keys of training batches (argent/data/loaders.py); the crop is
each sample's first kept box.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from argent.data.formats.grounded import DEFAULT_MIN_BOX_AREA, GroundedRecord, crop_region, iter_records
from argent.data.images import decode_image, eval_transform, load_image, pad_to_square, squeeze_transform
from argent.data.manifest import check_named_shards
from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy
from argent.models.tokenizer import tokenize


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
