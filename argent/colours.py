"""One colour per model family, the same in every figure (training curves, the probe's exposure figure),
and the colours of the per-run figures' item types, which are never a family's.

A run's family is its catalogue tag ``family`` (config/variants.yaml, inherited through ``extends:``,
stored in the run's ``config.yaml`` under ``tracking.tags``): an ablation is drawn in its family's
colour and told apart by its line style. Figures never take matplotlib's colour cycle: it shifts when
a panel lacks a family (CLIP has no curvature), and the legend then names the wrong model.
No matplotlib here: plain colour strings any plotting call takes.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["FAMILY_COLOURS", "ITEM_COLOURS", "LINE_STYLES", "family_colour", "family_of", "item_colour", "line_styles"]

FAMILY_COLOURS: dict[str, str] = {"clip": "#1f77b4", "meru": "#ff7f0e", "hycoclip": "#2ca02c", "argent": "#d62728"}
"""The paper's four families (tab10's first four, the order of Table 2)."""
SPARE_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LINE_STYLES = ("-", "--", ":", "-.")
ITEM_COLOURS: dict[str, str] = {
    "image": "#252525", "crop": "#969696",  # pixels: black and grey
    # text: a light-to-dark purple ramp, general (level 1) to specific (level 4, the full caption)
    "caption_L1": "#cbc9e2", "caption_L2": "#9e9ac8", "caption_L3": "#756bb1", "caption_L4": "#54278f",
    "caption": "#3f007d", "phrase": "#e6ab02",
}
"""The per-run figures' item types (norms, Poincaré disk: argent/evaluation/analysis.py): no family's colour
and no spare one, so that red is ARGENT in every figure and never a caption level."""
OTHER_ITEM = "#bdbdbd"


def item_colour(item: str) -> str:
    """The colour of an item type of the per-run figures (``ITEM_COLOURS``; another type: light grey)."""
    return ITEM_COLOURS.get(item, OTHER_ITEM)


def family_colour(family: str) -> str:
    """The family's colour; another name gets a spare colour chosen by a stable hash of the name
    (``hash()`` is salted per process: the same unknown family would change colour between figures)."""
    known = FAMILY_COLOURS.get(family.lower())
    return known or SPARE_COLOURS[zlib.crc32(family.lower().encode()) % len(SPARE_COLOURS)]


def family_of(stored_config: Mapping[str, Any], fallback: str) -> str:
    """The family tag of a run's stored config (``tracking.tags.family``), else ``fallback`` (its variant)."""
    tracking = stored_config.get("tracking")
    tags = tracking.get("tags") if isinstance(tracking, Mapping) else None
    family = tags.get("family") if isinstance(tags, Mapping) else None
    return str(family) if family else fallback


def line_styles(families: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``{label: {"color", "linestyle"}}`` for lines ``label`` of family ``families[label]``: the family's
    colour, and the k-th label of a family (in sorted order) the k-th line style. One call for a whole
    figure, so a label keeps its style in every panel."""
    seen: dict[str, int] = {}
    out = {}
    for label in sorted(families):
        family = families[label]
        rank = seen[family] = seen.get(family, -1) + 1
        out[label] = {"color": family_colour(family), "linestyle": LINE_STYLES[rank % len(LINE_STYLES)]}
    return out
