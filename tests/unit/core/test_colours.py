"""argent/colours.py: the one place a figure takes a family's colour from."""

from __future__ import annotations

import subprocess
import sys

from argent.colours import FAMILY_COLOURS, SPARE_COLOURS, family_colour, family_of, line_styles


def test_the_four_families_have_distinct_fixed_colours() -> None:
    assert set(FAMILY_COLOURS) == {"clip", "meru", "hycoclip", "argent"}
    assert len(set(FAMILY_COLOURS.values())) == 4
    assert family_colour("MERU") == FAMILY_COLOURS["meru"]


def test_an_unknown_family_gets_a_spare_colour_the_same_in_every_process() -> None:
    colour = family_colour("siglip")
    assert colour in SPARE_COLOURS and colour not in FAMILY_COLOURS.values()
    again = subprocess.run([sys.executable, "-c", "from argent.colours import family_colour as f; print(f('siglip'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert again == colour


def test_family_of_reads_the_run_config_tag_else_the_variant() -> None:
    assert family_of({"tracking": {"tags": {"family": "argent"}}}, "hycoclip_adaent_any") == "argent"
    assert family_of({}, "meru_adaent") == "meru_adaent"
    assert family_of({"tracking": None}, "clip") == "clip"


def test_line_styles_share_a_family_colour_and_vary_the_style() -> None:
    styles = line_styles({"main/meru": "meru", "3a/meru_adaent": "meru", "main/clip": "clip"})
    assert styles["main/meru"]["color"] == styles["3a/meru_adaent"]["color"] == FAMILY_COLOURS["meru"]
    assert styles["main/meru"]["linestyle"] != styles["3a/meru_adaent"]["linestyle"]
    assert styles["main/clip"] == {"color": FAMILY_COLOURS["clip"], "linestyle": "-"}
