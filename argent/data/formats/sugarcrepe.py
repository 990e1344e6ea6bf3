"""SugarCrepe compositional benchmark (Hsieh et al., NeurIPS 2023; docs/method.md §5).

One JSON file per category (``add_att.json``, ``add_obj.json``, ``replace_att.json``,
``replace_obj.json``, ``replace_rel.json``, ``swap_att.json``, ``swap_obj.json``), each
``{"<idx>": {"filename": "<12-digit COCO id>.jpg", "caption", "negative_caption"}}``.

Images are matched by integer COCO id, whatever the file-name pattern of the image folder
(``000000085329.jpg``, ``COCO_val2014_000000085329.jpg``, ...): the id is the last run of digits
in a file's stem. An item whose image is absent is ``missing_image``, an empty caption or negative
``empty_caption``, an entry that is not the expected object ``malformed_json`` (``BadDataPolicy``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from argent.data.images import IMAGE_EXTENSIONS
from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy

CATEGORIES: tuple[str, ...] = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
_TRAILING_DIGITS = re.compile(r"(\d+)\D*$")


@dataclass(frozen=True)
class SugarCrepeItem:
    """One (image, caption, negative caption) test; ``category`` is the JSON file stem."""

    category: str
    idx: str
    image_path: Path
    caption: str
    negative_caption: str


def coco_id(name: str) -> int | None:
    """The integer id in a COCO-style file name (its last run of digits), or None."""
    match = _TRAILING_DIGITS.search(Path(name).stem)
    return int(match.group(1)) if match else None


def index_images_by_id(image_dir: str | Path) -> dict[int, Path]:
    """{COCO id: path} for the images in ``image_dir`` (sorted names; the first file wins an id)."""
    image_dir = Path(image_dir)
    if not image_dir.is_dir():
        raise BadDataError(f"{image_dir}: image folder not found")
    index: dict[int, Path] = {}
    for path in sorted(image_dir.iterdir()):
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            image_id = coco_id(path.name)
            if image_id is not None:
                index.setdefault(image_id, path)
    return index


def _idx_order(idx: str) -> tuple[int, int | str]:
    return (0, int(idx)) if idx.isdigit() else (1, idx)


def read_sugarcrepe(json_dir: str | Path, image_dir: str | Path, policy: BadDataPolicy | None = None) -> list[SugarCrepeItem]:
    """Every item of every ``*.json`` in ``json_dir`` (categories sorted, items by index)."""
    policy = resolve_policy(policy)
    json_dir = Path(json_dir)
    files = sorted(json_dir.glob("*.json"))
    if not files:
        raise BadDataError(f"{json_dir}: no SugarCrepe *.json file (expected {', '.join(CATEGORIES)})")
    images = index_images_by_id(image_dir)
    items: list[SugarCrepeItem] = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise BadDataError(f"{path}: not valid JSON ({err})") from None
        if not isinstance(data, dict):
            raise BadDataError(f"{path}: expected an object {{idx: {{filename, caption, negative_caption}}}}")
        for idx in sorted(data, key=_idx_order):
            entry = data[idx]
            where = f"{path}: item {idx}"
            if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
                policy.bad("malformed_json", f"{where}: needs 'filename', 'caption' and 'negative_caption'")
                continue
            caption, negative = entry.get("caption"), entry.get("negative_caption")
            if not isinstance(caption, str) or not caption.strip() or not isinstance(negative, str) or not negative.strip():
                policy.bad("empty_caption", f"{where}: caption or negative_caption missing or empty")
                continue
            image_id = coco_id(entry["filename"])
            if image_id is None or image_id not in images:
                policy.bad("missing_image", f"{where}: no image with COCO id of {entry['filename']!r} in {image_dir}")
                continue
            items.append(SugarCrepeItem(path.stem, str(idx), images[image_id], caption.strip(), negative.strip()))
    policy.require_usable(len(items), f"{json_dir} (SugarCrepe)")
    return items
