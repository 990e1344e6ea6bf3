"""The exposure figure colours a line by its catalogue family (argent/colours.py), as the training
curves do, whichever families a panel holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from argent.colours import FAMILY_COLOURS
from argent.probe.figure import plot_exposure
from argent.probe.protocol import PROTOCOL

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def result(variant: str, family: str, ablations: tuple[str, ...]) -> dict:
    conditions = [{"ablation": kind, "level": 50, "shuffle": "none",
                   "summary": {"test": {"unseen": {"category_mean_macro_f1": {"values": [0.5, 0.55]}}}}}
                  for kind in ablations]
    return {"protocol": PROTOCOL, "model": {"family": variant, "size": "tiny", "catalogue_family": family},
            "conditions": conditions}


def test_each_line_has_its_catalogue_family_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved: list[Figure] = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (saved.append(self), original(self, *a, **k))[1])
    results = [result("clip", "clip", ("systematic",)), result("meru", "meru", ("random", "systematic")),
               result("hycoclip_adaent_any", "argent", ("random", "systematic")),
               result("argent", "argent", ("random", "systematic"))]
    plot_exposure(results, tmp_path / "exposure.png")
    drawn = {(ax.get_title(), c.get_label()): to_hex(c.lines[0].get_color()) for ax in saved[0].axes
             for c in ax.containers}
    assert ("random ablation", "clip") not in drawn and ("random ablation", "meru") in drawn  # CLIP lacks a curve
    family = {"clip": "clip", "meru": "meru", "hycoclip_adaent_any": "argent", "argent": "argent"}
    for (title, label), colour in drawn.items():
        assert colour == FAMILY_COLOURS[family[label]], (title, label)
