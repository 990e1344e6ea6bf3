"""Retrieval caption sets: COCO ``captions_*.json`` and Karpathy split JSON (docs/method.md §5).

Both give a ``RetrievalSet``: a list of images, a flat list of captions, and for each caption the
index of its image. Images are checked by header (no decode). Bad entries go through the
``BadDataPolicy``: ``missing_image`` / ``corrupt_image`` drop the image and its captions,
``empty_caption`` drops one caption, ``unknown_image_id`` (COCO: an annotation for no listed image)
drops one caption, and an image left without captions is dropped (``no_caption``). A file that is
not the expected JSON is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.data.images import image_size_of
from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy


@dataclass
class RetrievalSet:
    """Images and captions; ``caption_image[j]`` is the index in ``image_paths`` of caption j's image."""

    image_paths: list[Path]
    captions: list[str]
    caption_image: list[int]

    def captions_of(self, image_index: int) -> list[int]:
        return [j for j, i in enumerate(self.caption_image) if i == image_index]


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise BadDataError(f"{path}: file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadDataError(f"{path}: not valid JSON ({err})") from None


def _image_ok(path: Path, where: str, policy: BadDataPolicy) -> bool:
    if not path.is_file():
        policy.bad("missing_image", f"{where}: {path} not found")
        return False
    if image_size_of(path) is None:
        policy.bad("corrupt_image", f"{where}: {path} unreadable")
        return False
    return True


def _build(entries: list[tuple[Path, list[str]]], what: str, policy: BadDataPolicy) -> RetrievalSet:
    image_paths: list[Path] = []
    captions: list[str] = []
    caption_image: list[int] = []
    for path, texts in entries:
        if not texts:
            policy.bad("no_caption", f"{what}: {path.name} has no usable caption")
            continue
        for text in texts:
            captions.append(text)
            caption_image.append(len(image_paths))
        image_paths.append(path)
    policy.require_usable(len(image_paths), what)
    return RetrievalSet(image_paths, captions, caption_image)


def _clean_caption(text: Any, where: str, policy: BadDataPolicy) -> str | None:
    if not isinstance(text, str) or not text.strip():
        policy.bad("empty_caption", f"{where}: caption {text!r} is missing or empty")
        return None
    return " ".join(text.split())


def read_coco_captions(json_path: str | Path, image_dir: str | Path, policy: BadDataPolicy | None = None) -> RetrievalSet:
    """COCO ``captions_<split>.json``: images sorted by id, captions in annotation-id order."""
    policy = resolve_policy(policy)
    json_path, image_dir = Path(json_path), Path(image_dir)
    data = _load_json(json_path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list) or not isinstance(data.get("annotations"), list):
        raise BadDataError(f"{json_path}: expected COCO captions JSON with 'images' and 'annotations' lists")
    files: dict[int, str] = {}
    for i, img in enumerate(data["images"]):
        if not isinstance(img, dict) or not isinstance(img.get("id"), int) or not isinstance(img.get("file_name"), str):
            policy.bad("malformed_json", f"{json_path}: images[{i}] needs integer 'id' and 'file_name'")
            continue
        files[img["id"]] = img["file_name"]
    texts: dict[int, list[tuple[int, str]]] = {image_id: [] for image_id in files}
    for i, ann in enumerate(data["annotations"]):
        where = f"{json_path}: annotations[{i}]"
        if not isinstance(ann, dict) or not isinstance(ann.get("image_id"), int):
            policy.bad("malformed_json", f"{where}: needs integer 'image_id' and 'caption'")
            continue
        if ann["image_id"] not in files:
            policy.bad("unknown_image_id", f"{where}: image_id {ann['image_id']} is not in 'images'")
            continue
        caption = _clean_caption(ann.get("caption"), f"{where} (image id {ann['image_id']})", policy)
        if caption is not None:
            texts[ann["image_id"]].append((ann.get("id", i) if isinstance(ann.get("id"), int) else i, caption))
    entries = []
    for image_id in sorted(files):
        path = image_dir / files[image_id]
        if _image_ok(path, f"{json_path}: image id {image_id}", policy):
            entries.append((path, [c for _, c in sorted(texts[image_id], key=lambda t: t[0])]))
    return _build(entries, f"{json_path}", policy)


def read_karpathy(
    json_path: str | Path,
    image_dir: str | Path,
    split: str = "test",
    policy: BadDataPolicy | None = None,
) -> RetrievalSet:
    """Karpathy split JSON (``dataset_coco.json``, ``dataset_flickr30k.json``): the images of ``split``
    in file order, each with its ``sentences[].raw``. The image is ``image_dir/filepath/filename``
    when that exists, else ``image_dir/filename``."""
    policy = resolve_policy(policy)
    json_path, image_dir = Path(json_path), Path(image_dir)
    data = _load_json(json_path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise BadDataError(f"{json_path}: expected Karpathy split JSON with an 'images' list")
    entries = []
    n_split = 0
    for i, img in enumerate(data["images"]):
        where = f"{json_path}: images[{i}]"
        if not isinstance(img, dict) or not isinstance(img.get("filename"), str) or not isinstance(img.get("sentences"), list):
            policy.bad("malformed_json", f"{where}: needs 'filename', 'split' and a 'sentences' list")
            continue
        if img.get("split") != split:
            continue
        n_split += 1
        filepath = img.get("filepath") or ""
        path = image_dir / filepath / img["filename"]
        if filepath and not path.is_file():
            path = image_dir / img["filename"]
        if not _image_ok(path, where, policy):
            continue
        captions = []
        for k, sentence in enumerate(img["sentences"]):
            raw = sentence.get("raw") if isinstance(sentence, dict) else None
            caption = _clean_caption(raw, f"{where}.sentences[{k}]", policy)
            if caption is not None:
                captions.append(caption)
        entries.append((path, captions))
    if n_split == 0:
        raise BadDataError(f"{json_path}: no image with split {split!r}")
    return _build(entries, f"{json_path} (split {split})", policy)
