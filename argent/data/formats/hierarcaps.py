"""HierarCaps readers (Alper & Averbuch-Elor, ECCV 2024; docs/method.md §5).

``hierarcaps_test.csv``: columns ``id, captions, image_url``; ``captions`` holds 4 levels joined by
``" => "``, general → specific (level 4 is the original COCO caption); the image id is the trailing
integer of ``image_url`` and the image file is ``COCO_val2014_<12-digit id>.jpg`` in the image folder.
``hierarcaps_test_expanded.csv.gz``: columns ``positive, negative, image_url``, each a 4-level chain.

Bad rows (wrong level count, an empty level, no image id in the URL, a duplicate id, a missing image
file) go through the ``BadDataPolicy``: skipped and counted by reason, or a ``BadDataError`` naming
the file, the row (1-based data row, the header is row 0) and the id. A missing column is always
an error: nothing in the file could be read.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy

SEPARATOR = " => "
N_LEVELS = 4
TEST_COLUMNS = ("id", "captions", "image_url")
EXPANDED_COLUMNS = ("positive", "negative", "image_url")
_TRAILING_INT = re.compile(r"(\d+)(?:\.[A-Za-z]+)?$")


@dataclass(frozen=True)
class HierarCapsSample:
    """One image with its caption chain; ``levels`` run general → specific."""

    id: str
    levels: tuple[str, str, str, str]
    image_id: int
    image_path: Path | None


@dataclass(frozen=True)
class HierarCapsRecord:
    """A read sample plus where it came from: ``row`` (1-based data row) and its verbatim CSV text."""

    sample: HierarCapsSample
    row: int
    raw: str


@dataclass(frozen=True)
class RejectedRow:
    """A row the skip policy dropped: where, which id (if any) and why."""

    row: int
    id: str
    reason: str
    detail: str


@dataclass(frozen=True)
class HierarCapsExpandedSample:
    """One row of ``hierarcaps_test_expanded.csv.gz``: a positive and a negative 4-level chain."""

    row: int
    positive: tuple[str, str, str, str]
    negative: tuple[str, str, str, str]
    image_id: int


# ------------------------------------------------------------------------------------------------
# Parsing helpers
# ------------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise BadDataError(f"{path}: file not found")
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        # utf-8-sig: a BOM would otherwise become part of the first column's name.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BadDataError(f"{path}: not UTF-8 text ({err}); re-save the file as UTF-8") from None


def iter_raw_records(text: str) -> Iterator[tuple[list[str] | None, str]]:
    """CSV records with their verbatim text: ``(fields, raw)``; a quoted field may span lines.

    ``csv.reader`` pulls one physical line at a time and stops as soon as a record is complete,
    so the lines it pulled since the previous record are exactly that record's text.

    An unbalanced quote would swallow the rest of the file into one record (csv reads to the end
    looking for the closing quote). A multi-line record with an odd number of quote characters is
    such a record: it is yielded as ``(None, its first line)`` and reading restarts on the next
    line, so the rows after it are still read and only the broken row is counted.
    """
    lines = io.StringIO(text, newline="").readlines()
    start = 0
    while start < len(lines):
        consumed: list[str] = []

        def feed(first: int = start, sink: list[str] = consumed) -> Iterator[str]:
            for line in lines[first:]:
                sink.append(line)
                yield line

        for fields in csv.reader(feed()):
            raw, n = "".join(consumed), len(consumed)
            consumed.clear()
            if n > 1 and raw.count('"') % 2 == 1:
                yield None, lines[start]
                start += 1
                break
            yield fields, raw
            start += n
        else:
            return


def unbalanced_quote(where: str) -> str:
    return f"{where}: a quote opens in this row and never closes (it would swallow the rest of the file)"


def split_levels(chain: str) -> tuple[str, ...]:
    """``"a => b => c => d"`` -> ``("a", "b", "c", "d")`` (each level stripped)."""
    return tuple(part.strip() for part in chain.split(SEPARATOR.strip()))


def image_id_from_url(url: str) -> int | None:
    """Trailing integer of an image URL or file name (``.../COCO_val2014_000000301718.jpg`` -> 301718)."""
    match = _TRAILING_INT.search(url.strip())
    return int(match.group(1)) if match else None


def image_file_candidates(url: str, image_id: int) -> list[str]:
    """File names an image may have in the image folder, in the order they are tried."""
    names = [url.strip().rsplit("/", 1)[-1], f"COCO_val2014_{image_id:012d}.jpg", f"{image_id:012d}.jpg"]
    return list(dict.fromkeys(n for n in names if n))


def _check_header(header: list[str], expected: tuple[str, ...], path: Path) -> dict[str, int]:
    columns = [h.strip() for h in header]
    missing = [c for c in expected if c not in columns]
    if missing:
        raise BadDataError(f"{path}: missing column(s) {missing}; found {columns}; expected {list(expected)}")
    return {c: columns.index(c) for c in expected}


def _chain(value: str) -> tuple[str, str, str, str] | str:
    """A 4-level chain, or the reason it is not one."""
    levels = split_levels(value)
    if len(levels) != N_LEVELS:
        return "wrong_level_count"
    if any(not level for level in levels):
        return "empty_level"
    return levels  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------
# Readers
# ------------------------------------------------------------------------------------------------


def read_hierarcaps_records(
    csv_path: str | Path,
    image_dir: str | Path | None,
    policy: BadDataPolicy | None = None,
) -> tuple[list[HierarCapsRecord], list[RejectedRow]]:
    """All usable rows of a ``hierarcaps_test.csv`` with their row numbers and verbatim text,
    plus the rows the skip policy dropped.

    ``image_dir=None``: images are not looked up (``image_path`` is None), for text-only use.
    Duplicate ids: the first row keeps the id, later ones are bad rows (``duplicate_id``).
    """
    csv_path = Path(csv_path)
    policy = resolve_policy(policy)
    image_dir = Path(image_dir) if image_dir is not None else None
    if image_dir is not None and not image_dir.is_dir():
        raise BadDataError(f"{image_dir}: image folder not found (for {csv_path}); pass the folder of COCO_val2014_*.jpg")
    records = iter_raw_records(_read_text(csv_path))
    header = next(records, None)
    if header is None:
        raise BadDataError(f"{csv_path}: empty file; expected columns {list(TEST_COLUMNS)}")
    if header[0] is None:
        raise BadDataError(unbalanced_quote(f"{csv_path}: header"))
    col = _check_header(header[0], TEST_COLUMNS, csv_path)
    present = set(p.name for p in image_dir.iterdir()) if image_dir is not None else set()

    out: list[HierarCapsRecord] = []
    rejected: list[RejectedRow] = []
    seen_ids: dict[str, int] = {}
    for row, (fields, raw) in enumerate(records, start=1):
        if fields is None:
            policy.bad("unbalanced_quote", unbalanced_quote(f"{csv_path}: row {row}"))
            rejected.append(RejectedRow(row, "", "unbalanced_quote", "a quote never closes"))
            continue
        if not fields or all(not f.strip() for f in fields):
            continue  # a blank line is not a row
        sample_id = fields[col["id"]].strip() if len(fields) > col["id"] else ""
        parsed = _parse_row(fields, len(header[0]), col, sample_id, seen_ids, image_dir, present)
        if isinstance(parsed, tuple):
            reason, detail = parsed
            policy.bad(reason, f"{csv_path}: row {row} (id={sample_id!r}): {detail}")
            rejected.append(RejectedRow(row, sample_id, reason, detail))
            continue
        seen_ids[sample_id] = row
        out.append(HierarCapsRecord(parsed, row, raw))
    policy.require_usable(len(out), str(csv_path))
    return out, rejected


def _parse_row(fields: list[str], n_columns: int, col: dict[str, int], sample_id: str, seen_ids: dict[str, int],
               image_dir: Path | None, present: set[str]) -> HierarCapsSample | tuple[str, str]:
    """One data row as a sample, or (the bad-data reason, what is wrong) when it cannot be one."""
    if len(fields) != n_columns:
        return "wrong_column_count", f"{len(fields)} fields, header has {n_columns}"
    if not sample_id:
        return "missing_id", "empty id"
    if sample_id in seen_ids:
        return "duplicate_id", f"id already used by row {seen_ids[sample_id]}"
    chain = _chain(fields[col["captions"]])
    if isinstance(chain, str):
        n = len(split_levels(fields[col["captions"]]))
        return chain, f"captions must be {N_LEVELS} non-empty levels joined by {SEPARATOR!r}, got {n}"
    url = fields[col["image_url"]]
    image_id = image_id_from_url(url)
    if image_id is None:
        return "bad_image_url", f"no image id at the end of image_url {url!r}"
    image_path = None
    if image_dir is not None:
        name = next((n for n in image_file_candidates(url, image_id) if n in present), None)
        if name is None:
            return "missing_image", (f"no image file for image id {image_id} in {image_dir} "
                                     f"(tried {image_file_candidates(url, image_id)})")
        image_path = image_dir / name
    return HierarCapsSample(sample_id, chain, image_id, image_path)


def read_header_raw(csv_path: str | Path) -> str:
    """The verbatim header line of a HierarCaps CSV (to write a subset in the original format)."""
    first = next(iter_raw_records(_read_text(Path(csv_path))), None)
    if first is None:
        raise BadDataError(f"{csv_path}: empty file")
    return first[1]


def read_hierarcaps(
    csv_path: str | Path,
    image_dir: str | Path | None,
    policy: BadDataPolicy | None = None,
) -> list[HierarCapsSample]:
    """The samples of a ``hierarcaps_test.csv``, in file order (see ``read_hierarcaps_records``)."""
    records, _ = read_hierarcaps_records(csv_path, image_dir, policy)
    return [r.sample for r in records]


def read_hierarcaps_expanded(
    csv_gz_path: str | Path,
    policy: BadDataPolicy | None = None,
) -> list[HierarCapsExpandedSample]:
    """Rows of ``hierarcaps_test_expanded.csv.gz`` (or an uncompressed ``.csv``), in file order.

    No image files are involved: only the image id of each row is read.
    """
    path = Path(csv_gz_path)
    policy = resolve_policy(policy)
    records = iter_raw_records(_read_text(path))
    header = next(records, None)
    if header is None:
        raise BadDataError(f"{path}: empty file; expected columns {list(EXPANDED_COLUMNS)}")
    if header[0] is None:
        raise BadDataError(unbalanced_quote(f"{path}: header"))
    col = _check_header(header[0], EXPANDED_COLUMNS, path)
    out: list[HierarCapsExpandedSample] = []
    for row, (fields, _) in enumerate(records, start=1):
        where = f"{path}: row {row}"
        if fields is None:
            policy.bad("unbalanced_quote", unbalanced_quote(where))
            continue
        if not fields or all(not f.strip() for f in fields):
            continue
        if len(fields) != len(header[0]):
            policy.bad("wrong_column_count", f"{where}: {len(fields)} fields, header has {len(header[0])}")
            continue
        positive, negative = _chain(fields[col["positive"]]), _chain(fields[col["negative"]])
        if isinstance(positive, str) or isinstance(negative, str):
            reason = positive if isinstance(positive, str) else negative
            policy.bad(reason, f"{where}: positive and negative must be {N_LEVELS}-level chains")
            continue
        image_id = image_id_from_url(fields[col["image_url"]])
        if image_id is None:
            policy.bad("bad_image_url", f"{where}: no image id at the end of {fields[col['image_url']]!r}")
            continue
        out.append(HierarCapsExpandedSample(row, positive, negative, image_id))
    policy.require_usable(len(out), str(path))
    return out
