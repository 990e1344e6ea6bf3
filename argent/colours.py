"""One colour per model family, the same in every figure (training curves, the probe's exposure figure).

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

__all__ = ["FAMILY_COLOURS", "LINE_STYLES", "family_colour", "family_of", "line_styles"]

FAMILY_COLOURS: dict[str, str] = {"clip": "#1f77b4", "meru": "#ff7f0e", "hycoclip": "#2ca02c", "argent": "#d62728"}
"""The paper's four families (tab10's first four, the order of Table 2)."""
SPARE_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LINE_STYLES = ("-", "--", ":", "-.")


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
