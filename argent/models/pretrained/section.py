"""The workflow config's ``pretrained:`` section: released checkpoints evaluated like runs.

    pretrained:
      hycoclip-S:                       # the row name, <family>-<size>
        layout: meru                    # meru | meru_clip | open_clip
        arch: vit_s
        path: ckpt/hycoclip_vit_s.pth   # a local file; relative paths from the workflow's folder
        family: HyCoCLIP                # a label for tables (optional)
        optional: true                  # absent file: skipped with one line (default: an error)

Each entry is evaluated by the ``evaluate_pretrained`` rule on every benchmark ``evaluate.benchmarks``
names, into ``<results>/eval/pretrained/<name>/seed0/<benchmark>.json`` (``argent.runs.pretrained_eval_dir``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.config import ConfigError, from_dict
from argent.runs import PRETRAINED_GROUP, pretrained_eval_dir

__all__ = ["LAYOUTS", "PretrainedEntry", "available_entries", "parse_pretrained_section", "pretrained_section"]

# The checkpoint layouts argent.models.pretrained.load reads. Torch-free: the Snakefile parses this
# section on every job and must not import torch to do it.
LAYOUTS = {
    "meru": "MERU / HyCoCLIP checkpoint (hyperbolic); --arch vit_s | vit_b | vit_l",
    "meru_clip": "CLIP baseline of MERU / HyCoCLIP (Euclidean); --arch vit_s | vit_b | vit_l",
    "open_clip": "open_clip model; --arch an open_clip architecture name (e.g. ViT-B-32)",
}


@dataclass(frozen=True)
class PretrainedEntry:
    layout: str
    arch: str
    path: str
    family: str = ""
    optional: bool = False
    name: str = ""  # the section key, filled in by the parser

    @property
    def spec(self) -> str:
        """``<layout>:<path>``, as ``argent evaluate --pretrained`` takes it."""
        return f"{self.layout}:{self.path}"


def parse_pretrained_section(raw: Any, base_dir: str | Path | None = None) -> dict[str, PretrainedEntry]:
    """``pretrained:`` -> {name: entry}; every problem a ``ConfigError`` naming its key."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"pretrained: expected a mapping of <family>-<size> names to entries, "
                          f"got {type(raw).__name__}")
    out = {}
    for name, body in raw.items():
        where = f"pretrained.{name}"
        try:
            pretrained_eval_dir("results", str(name))  # checks the name's form
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from None
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: expected a mapping with layout, arch, path")
        missing = [k for k in ("layout", "arch", "path") if k not in body]
        if missing:
            raise ConfigError(f"{where}.{missing[0]}: required")
        entry = from_dict(PretrainedEntry, {**body, "name": str(name)}, where)
        if entry.layout not in LAYOUTS:
            raise ConfigError(f"{where}.layout: {entry.layout!r} is not allowed; allowed: {sorted(LAYOUTS)}")
        path = Path(entry.path).expanduser()
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        out[str(name)] = PretrainedEntry(entry.layout, entry.arch, str(path), entry.family, entry.optional, str(name))
    return out


def pretrained_section(raw: dict[str, Any], base_dir: str | Path | None = None) -> dict[str, PretrainedEntry]:
    """A workflow config mapping's ``pretrained:`` section, typed (absent: none)."""
    return parse_pretrained_section(raw.get("pretrained"), base_dir)


def available_entries(entries: dict[str, PretrainedEntry],
                      groups: list[str]) -> tuple[list[PretrainedEntry], list[str]]:
    """(entries whose file is there, one line per optional entry skipped). A required entry whose file
    is absent, or an experiment group named like the released models' folder, is a ``ConfigError``."""
    if entries and PRETRAINED_GROUP in groups:
        raise ConfigError(f"groups.{PRETRAINED_GROUP}: the name is reserved for released models "
                          f"(eval/{PRETRAINED_GROUP}/); rename the group")
    kept, skipped = [], []
    for entry in entries.values():
        if Path(entry.path).is_file():
            kept.append(entry)
        elif entry.optional:
            skipped.append(f"skipping optional released model {entry.name}: {entry.path} not found")
        else:
            raise ConfigError(f"pretrained.{entry.name}.path: {entry.path} not found; download the released file "
                              f"there, or mark the entry optional: true")
    return kept, skipped
