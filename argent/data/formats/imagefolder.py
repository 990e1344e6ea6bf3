"""Image-folder classification sets (ImageNet layout): ``root/<class id>/<image>``.

Class ids are the sorted folder names (torchvision ``ImageFolder`` order; WordNet ids for ImageNet and
hiershapes); class index = position in that order. Names come from ``class_names.tsv``
(``<id>\\t<name>`` per line) in ``root`` or beside it (``root/..``), else the ids themselves.
The taxonomy over the ids (``parent child`` lines) is read by ``argent.data.taxonomy``.

Every image's header is checked (no pixel decode): a missing or unreadable image is
``corrupt_image`` under the ``BadDataPolicy``. Files with other extensions are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from argent.data.images import IMAGE_EXTENSIONS, image_size_of
from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy

CLASS_NAMES_FILE = "class_names.tsv"


@dataclass
class ClassificationSet:
    """Images with integer labels; ``class_ids[label]`` is the folder name, ``class_names[label]`` its name."""

    root: Path
    samples: list[tuple[Path, int]]
    class_ids: list[str]
    class_names: list[str]

    @property
    def num_classes(self) -> int:
        return len(self.class_ids)

    @property
    def paths(self) -> list[Path]:
        return [path for path, _ in self.samples]

    @property
    def targets(self) -> list[int]:
        return [label for _, label in self.samples]


def read_class_names(path: str | Path) -> dict[str, str]:
    """``<id>\\t<name>`` lines -> {id: name}. Blank lines and ``#`` comments are skipped."""
    path = Path(path)
    names: dict[str, str] = {}
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise BadDataError(f"{path}: row {row}: expected '<id>\\t<name>', got {line!r}")
        class_id, name = parts[0].strip(), parts[1].strip()
        if class_id in names:
            raise BadDataError(f"{path}: row {row}: class id {class_id!r} appears twice")
        names[class_id] = name
    return names


def _find_names_file(root: Path) -> Path | None:
    for candidate in (root / CLASS_NAMES_FILE, root.parent / CLASS_NAMES_FILE):
        if candidate.is_file():
            return candidate
    return None


def read_image_folder(root: str | Path, policy: BadDataPolicy | None = None) -> ClassificationSet:
    """Read ``root/<class id>/*.{jpg,jpeg,png,webp,bmp}`` with labels and class names."""
    policy = resolve_policy(policy)
    root = Path(root)
    if not root.is_dir():
        raise BadDataError(f"{root}: image folder not found; expected <root>/<class id>/<image> files")
    class_ids = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not class_ids:
        raise BadDataError(f"{root}: no class folder; expected <root>/<class id>/<image> files")
    names_file = _find_names_file(root)
    if names_file is not None:
        names = read_class_names(names_file)
        missing = [c for c in class_ids if c not in names]
        if missing:
            raise BadDataError(f"{names_file}: no name for class id(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        class_names = [names[c] for c in class_ids]
    else:
        class_names = list(class_ids)
    samples: list[tuple[Path, int]] = []
    for label, class_id in enumerate(class_ids):
        files = sorted(p for p in (root / class_id).iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
        for path in files:
            if image_size_of(path) is None:
                policy.bad("corrupt_image", f"{path}: image unreadable (class {class_id})")
                continue
            samples.append((path, label))
    policy.require_usable(len(samples), f"{root} (image folder)")
    return ClassificationSet(root, samples, class_ids, class_names)
