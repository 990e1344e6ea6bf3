"""Grounded (GRIT / img2dataset) and plain (CC3M-style) image–caption webdataset shards.

Grounded sample: ``<key>.jpg`` + ``<key>.json`` with ``caption``, ``width``, ``height``, ``noun_chunks``
and ``ref_exps``; each span is ``[start_char, end_char, x1, y1, x2, y2, score]`` with the box
normalised to [0, 1]. Plain sample: ``<key>.jpg`` + ``<key>.txt`` (or a ``.json`` with ``caption``).
Extra fields (hiershapes' ``scene``) are ignored.

Crops and phrases are cut at load time by HyCoCLIP's rule (docs/method.md §5):
1. walk ``noun_chunks`` then ``ref_exps``; phrase = caption[start:end]; de-duplicate by phrase text,
   the first occurrence wins even if its box is then rejected;
2. box to pixels with int(x·W), int(y·H) (W, H from the image header, so images resized after the
   JSON was written still line up; +1e-6 so a box written as k/W reads back as k despite float
   error); keep iff (x2−x1)·(y2−y1) > ``min_box_area`` (1024 = 32·32 by default);
3. the crop is the box region padded to a square with white (``crop_region``); the full image gets
   the same padding. A sample with no kept box is dropped (counted as ``no_box_kept``).

Validation (every span is checked, kept or not): malformed JSON or span -> ``malformed_json``;
missing ``caption`` or an empty one -> ``empty_caption``; span outside the caption ->
``span_outside_caption``; box outside [0,1] or empty -> ``box_outside_image``; missing image ->
``missing_image``; unreadable image -> ``corrupt_image``. Each goes through the ``BadDataPolicy``.
Images are decoded only when a record is decoded (``decode_record``), never while parsing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from argent.data.images import decode_image, image_size_of, pad_to_square
from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy
from argent.data.shards import RawSample, expand_shards, iter_shard, sample_where

Format = Literal["grounded", "plain"]
IMAGE_KEYS: tuple[str, ...] = ("jpg", "jpeg", "png", "webp")
DEFAULT_MIN_BOX_AREA = 1024  # HyCoCLIP: 32·32 pixels
_BOX_TOL = 1e-6  # normalised boxes may overshoot [0,1] by float error only
_PIXEL_NUDGE = 1e-6


@dataclass(frozen=True)
class Region:
    """A kept box: its phrase and pixel box (x1, y1, x2, y2), right/bottom exclusive."""

    phrase: str
    box: tuple[int, int, int, int]


@dataclass(frozen=True)
class GroundedRecord:
    """A parsed, validated sample before any image decode."""

    key: str
    where: str
    caption: str
    image_bytes: bytes
    width: int
    height: int
    regions: tuple[Region, ...] = ()


@dataclass
class GroundedSample:
    """A decoded sample: the padded full image and, per kept region, its padded crop."""

    key: str
    caption: str
    image: Image.Image
    regions: tuple[Region, ...]
    crops: list[Image.Image]


class _SpanError(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# ------------------------------------------------------------------------------------------------
# The crop rule (pure)
# ------------------------------------------------------------------------------------------------


def _as_index(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise _SpanError("malformed_json", f"{what} {value!r} is not an integer")
    return int(value)


def _check_span(span: Any, caption: str, what: str) -> tuple[str, tuple[float, float, float, float]]:
    if not isinstance(span, (list, tuple)) or len(span) != 7:
        raise _SpanError("malformed_json", f"{what}: expected [start, end, x1, y1, x2, y2, score], got {span!r}")
    start, end = _as_index(span[0], f"{what} start"), _as_index(span[1], f"{what} end")
    coords = span[2:6]
    for v in (*coords, span[6]):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _SpanError("malformed_json", f"{what}: {v!r} is not a finite number")
    if not 0 <= start < end <= len(caption):
        raise _SpanError("span_outside_caption", f"{what}: chars [{start}, {end}) outside a caption of {len(caption)} chars")
    x1, y1, x2, y2 = (float(v) for v in coords)
    inside = all(-_BOX_TOL <= v <= 1 + _BOX_TOL for v in (x1, y1, x2, y2))
    if not inside or x2 <= x1 or y2 <= y1:
        raise _SpanError("box_outside_image", f"{what}: box {[x1, y1, x2, y2]} is not inside [0,1] with x1<x2, y1<y2")
    return caption[start:end], (x1, y1, x2, y2)


def select_regions(
    caption: str,
    noun_chunks: Sequence[Any],
    ref_exps: Sequence[Any],
    width: int,
    height: int,
    min_box_area: int = DEFAULT_MIN_BOX_AREA,
) -> list[Region]:
    """HyCoCLIP's crop rule over validated spans; raises ``_SpanError`` on the first bad span."""
    spans = [("noun_chunks", i, s) for i, s in enumerate(noun_chunks)] + [("ref_exps", i, s) for i, s in enumerate(ref_exps)]
    checked = [_check_span(span, caption, f"{field}[{i}]") for field, i, span in spans]
    seen: set[str] = set()
    kept: list[Region] = []
    for phrase, (x1, y1, x2, y2) in checked:
        if phrase in seen:
            continue
        seen.add(phrase)  # first occurrence wins, even if its box is rejected below
        px1, py1 = int(x1 * width + _PIXEL_NUDGE), int(y1 * height + _PIXEL_NUDGE)
        px2, py2 = min(int(x2 * width + _PIXEL_NUDGE), width), min(int(y2 * height + _PIXEL_NUDGE), height)
        px1, py1 = max(px1, 0), max(py1, 0)
        if (px2 - px1) * (py2 - py1) > min_box_area:
            kept.append(Region(phrase, (px1, py1, px2, py2)))
    return kept


def crop_region(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    """The box region of ``image`` padded to a square with white."""
    return pad_to_square(image.crop(box))


# ------------------------------------------------------------------------------------------------
# Parsing raw samples
# ------------------------------------------------------------------------------------------------


def _image_bytes(sample: RawSample) -> bytes | None:
    for ext in IMAGE_KEYS:
        if ext in sample:
            return sample[ext]
    return None


def _header_size(sample: RawSample, where: str, policy: BadDataPolicy) -> tuple[bytes, int, int] | None:
    data = _image_bytes(sample)
    if data is None:
        policy.bad("missing_image", f"{where}: no image member ({'/'.join(IMAGE_KEYS)})")
        return None
    size = image_size_of(data)
    if size is None:
        policy.bad("corrupt_image", f"{where}: image header unreadable")
        return None
    return data, size[0], size[1]


def _load_json(sample: RawSample, where: str, policy: BadDataPolicy) -> dict | None:
    if "json" not in sample:
        policy.bad("malformed_json", f"{where}: no .json member")
        return None
    try:
        meta = json.loads(sample["json"])
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        policy.bad("malformed_json", f"{where}: invalid JSON ({err})")
        return None
    if not isinstance(meta, dict):
        policy.bad("malformed_json", f"{where}: JSON is a {type(meta).__name__}, expected an object")
        return None
    return meta


def _caption_of(value: Any, where: str, policy: BadDataPolicy) -> str | None:
    if not isinstance(value, str) or not value.strip():
        policy.bad("empty_caption", f"{where}: caption {value!r} is missing or empty")
        return None
    return value


def parse_grounded(sample: RawSample, *, min_box_area: int = DEFAULT_MIN_BOX_AREA, policy: BadDataPolicy) -> GroundedRecord | None:
    """Validate a grounded raw sample and apply the crop rule; None if skipped (counted in ``policy``)."""
    where = sample_where(sample)
    meta = _load_json(sample, where, policy)
    if meta is None:
        return None
    caption = _caption_of(meta.get("caption"), where, policy)
    if caption is None:
        return None
    noun_chunks, ref_exps = meta.get("noun_chunks", []), meta.get("ref_exps", [])
    if not isinstance(noun_chunks, list) or not isinstance(ref_exps, list):
        policy.bad("malformed_json", f"{where}: noun_chunks and ref_exps must be lists")
        return None
    image = _header_size(sample, where, policy)
    if image is None:
        return None
    data, width, height = image
    try:
        regions = select_regions(caption, noun_chunks or [], ref_exps or [], width, height, min_box_area)
    except _SpanError as err:
        policy.bad(err.reason, f"{where}: {err.detail}")
        return None
    if not regions:
        policy.drop("no_box_kept", where)
        return None
    return GroundedRecord(sample["__key__"], where, caption, data, width, height, tuple(regions))


def parse_plain(sample: RawSample, *, policy: BadDataPolicy) -> GroundedRecord | None:
    """Validate a plain image–caption raw sample (caption from ``.txt``, else ``.json``'s caption)."""
    where = sample_where(sample)
    if "txt" in sample:
        try:
            raw: Any = sample["txt"].decode("utf-8")
        except UnicodeDecodeError as err:
            policy.bad("malformed_text", f"{where}: caption is not UTF-8 ({err})")
            return None
    else:
        meta = _load_json(sample, where, policy)
        if meta is None:
            return None
        raw = meta.get("caption")
    caption = _caption_of(raw, where, policy)
    if caption is None:
        return None
    image = _header_size(sample, where, policy)
    if image is None:
        return None
    data, width, height = image
    return GroundedRecord(sample["__key__"], where, caption.strip(), data, width, height, ())


def parse_sample(sample: RawSample, fmt: Format, *, min_box_area: int, policy: BadDataPolicy) -> GroundedRecord | None:
    if fmt == "grounded":
        return parse_grounded(sample, min_box_area=min_box_area, policy=policy)
    if fmt == "plain":
        return parse_plain(sample, policy=policy)
    raise ValueError(f"data.format: {fmt!r} is not allowed; allowed: ['grounded', 'plain']")


def decode_record(record: GroundedRecord, policy: BadDataPolicy, pad: bool = True) -> GroundedSample | None:
    """Decode the image and cut the crops; None (counted) if the image does not decode.

    ``pad``: pad the full image to a square like the crops (grounded data); plain data is not padded.
    """
    try:
        image = decode_image(record.image_bytes, record.where)
    except BadDataError:
        policy.bad("corrupt_image", f"{record.where}: image does not decode")
        return None
    crops = [crop_region(image, region.box) for region in record.regions]
    return GroundedSample(record.key, record.caption, pad_to_square(image) if pad else image, record.regions, crops)


# ------------------------------------------------------------------------------------------------
# Readers
# ------------------------------------------------------------------------------------------------


def iter_records(
    pattern: str | Path | Sequence[str | Path],
    *,
    fmt: Format = "grounded",
    min_box_area: int = DEFAULT_MIN_BOX_AREA,
    policy: BadDataPolicy | None = None,
) -> Iterator[GroundedRecord]:
    """Parsed records of every shard (sorted), in order, without decoding images.

    Raises ``BadDataError`` at the end if nothing was usable.
    """
    policy = resolve_policy(policy)
    shards = expand_shards(pattern)
    n = 0
    for shard in shards:
        for sample in iter_shard(shard, policy):
            record = parse_sample(sample, fmt, min_box_area=min_box_area, policy=policy)
            if record is not None:
                n += 1
                yield record
    policy.require_usable(n, f"{pattern} ({len(shards)} shard(s), {fmt})")


def read_grounded(
    pattern: str | Path | Sequence[str | Path],
    *,
    min_box_area: int = DEFAULT_MIN_BOX_AREA,
    policy: BadDataPolicy | None = None,
    fmt: Format = "grounded",
) -> list[GroundedSample]:
    """Every usable sample, decoded (images, crops), in shard order. For small sets and evaluation."""
    policy = resolve_policy(policy)
    out = []
    for record in iter_records(pattern, fmt=fmt, min_box_area=min_box_area, policy=policy):
        sample = decode_record(record, policy, pad=fmt == "grounded")
        if sample is not None:
            out.append(sample)
    policy.require_usable(len(out), f"{pattern}")
    return out


def read_plain(pattern: str | Path | Sequence[str | Path], *, policy: BadDataPolicy | None = None) -> list[GroundedSample]:
    """Plain image–caption shards, decoded (no regions)."""
    return read_grounded(pattern, policy=policy, fmt="plain")


def iter_captions(pattern: str | Path | Sequence[str | Path], policy: BadDataPolicy | None = None) -> Iterator[tuple[str, str]]:
    """(key, caption) of every sample with a usable caption, without reading images or boxes.

    Grounded (``.json`` caption) and plain (``.txt``) samples are both read; used by the negatives miner.
    """
    policy = resolve_policy(policy)
    n = 0
    for shard in expand_shards(pattern):
        for sample in iter_shard(shard, policy):
            where = sample_where(sample)
            if "json" in sample:
                meta = _load_json(sample, where, policy)
                caption = _caption_of(meta.get("caption"), where, policy) if meta is not None else None
            elif "txt" in sample:
                try:
                    caption = _caption_of(sample["txt"].decode("utf-8"), where, policy)
                except UnicodeDecodeError as err:
                    policy.bad("malformed_text", f"{where}: caption is not UTF-8 ({err})")
                    caption = None
            else:
                policy.bad("empty_caption", f"{where}: no .json or .txt member")
                caption = None
            if caption is not None:
                n += 1
                yield sample["__key__"], caption.strip()
    policy.require_usable(n, f"{pattern} (captions)")
