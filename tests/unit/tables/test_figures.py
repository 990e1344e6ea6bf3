"""The training-curves figure names the right model: each run is drawn in its family's colour in
every panel, the legend's colour is its lines' colour, also when a family has no curve in a panel
(CLIP: no curvature), which used to shift matplotlib's colour cycle under the legend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from argent.tables.figures import training_curves

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# (group, variant, family, has curvature): CLIP is Euclidean, it logs no "curv"
RUNS = (("main", "clip", "clip", False), ("main", "meru", "meru", True), ("main", "hycoclip", "hycoclip", True),
        ("ablations", "meru_adaent", "meru", True))


def make_runs(runs: Path) -> None:
    for group, variant, family, curved in RUNS:
        folder = runs / group / f"{variant}-tiny" / "seed0"
        folder.mkdir(parents=True)
        rows = [{"step": s, "loss": 2.0 / s, **({"curv": 1.0 + s / 10} if curved else {})} for s in (1, 2, 3)]
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (folder / "config.yaml").write_text(yaml.safe_dump({"variant_name": variant, "size": "tiny",
                                                            "tracking": {"tags": {"family": family}}}))


@pytest.fixture
def drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Figure:
    """The Figure ``training_curves`` saves (caught at savefig; the file is written as usual)."""
    saved: list[Figure] = []
    original = Figure.savefig

    def keep(self: Figure, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    make_runs(tmp_path / "runs")
    training_curves(tmp_path / "runs", tmp_path / "curves.png", keys=("loss", "curv"))
    assert (tmp_path / "curves.png").is_file() and len(saved) == 1
    return saved[0]


def lines_by_label(fig: Figure) -> list[tuple[str, str, str]]:
    """(panel title, label, colour) of every labelled line of every panel."""
    return [(ax.get_title(), line.get_label(), to_hex(line.get_color()))
            for ax in fig.axes for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_each_legend_entry_has_its_lines_colour_in_every_panel(drawn: Figure) -> None:
    legends = [ax.get_legend() for ax in drawn.axes if ax.get_legend() is not None]
    legend = {text.get_text(): to_hex(handle.get_color())
              for lg in legends for text, handle in zip(lg.get_texts(), lg.get_lines())}
    lines = lines_by_label(drawn)
    assert {title for title, _, _ in lines} == {"loss", "curv"}
    assert "main/clip-tiny" not in {label for title, label, _ in lines if title == "curv"}  # the panel it lacks
    for title, label, colour in lines:
        assert legend.get(label) == colour, f"panel {title}: {label} drawn in {colour}, legend says {legend.get(label)}"


def test_a_family_has_one_colour_and_its_ablations_another_line_style(drawn: Figure) -> None:
    from argent.colours import FAMILY_COLOURS

    family = {f"{group}/{variant}-tiny": fam for group, variant, fam, _ in RUNS}
    for title, label, colour in lines_by_label(drawn):
        assert colour == FAMILY_COLOURS[family[label]], (title, label)
    styles = {line.get_label(): line.get_linestyle() for line in drawn.axes[1].get_lines()}
    assert styles["ablations/meru_adaent-tiny"] != styles["main/meru-tiny"]
