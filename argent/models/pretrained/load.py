"""``load_pretrained("meru:/ckpt/hycoclip_vit_s.pth", "vit_s")``: a released checkpoint as the model
the evaluation uses (the layouts: ``argent.models.pretrained.section.LAYOUTS``)."""

from __future__ import annotations

from pathlib import Path

import torch

from argent.models.pretrained.base import PretrainedError, PretrainedModel
from argent.models.pretrained.meru_layout import load_meru
from argent.models.pretrained.open_clip_adapter import load_open_clip
from argent.models.pretrained.section import LAYOUTS


def parse_spec(spec: str) -> tuple[str, Path]:
    """``<layout>:<path>`` -> (layout, path)."""
    layout, sep, path = spec.partition(":")
    if not sep or not path or layout not in LAYOUTS:
        known = "; ".join(f"{k}: {v}" for k, v in LAYOUTS.items())
        raise PretrainedError(f"--pretrained {spec!r}: expected <layout>:<path> with layout one of: {known}")
    return layout, Path(path)


def load_pretrained(spec: str, arch: str | None, device: str | torch.device = "cpu") -> PretrainedModel:
    """The adapter for ``<layout>:<path>`` and architecture ``arch``, in eval mode on ``device``."""
    layout, path = parse_spec(spec)
    if not arch:
        raise PretrainedError(f"--pretrained {spec}: name the architecture with --arch ({LAYOUTS[layout]})")
    if layout == "open_clip":
        model: PretrainedModel = load_open_clip(path, arch)
    else:
        model = load_meru(path, arch, family="meru" if layout == "meru" else "clip")
    return model.to(device).eval()
