"""The per-run figures' item types take colours no family has (issue 53: red was ARGENT in the curves and
caption level 3 in the Poincaré disk); caption levels read general to specific, light to dark."""

from argent.colours import FAMILY_COLOURS, ITEM_COLOURS, SPARE_COLOURS, item_colour


def test_no_item_type_wears_a_family_colour():
    families = {c.lower() for c in (*FAMILY_COLOURS.values(), *SPARE_COLOURS)}
    items = ["image", "crop", "caption", "phrase", *(f"caption_L{k}" for k in range(1, 5)), "something else"]
    colours = [item_colour(name).lower() for name in items]
    assert not families & set(colours)
    assert len(set(colours[:-1])) == len(colours) - 1  # every known type its own colour


def test_caption_levels_darken_from_general_to_specific():
    def lightness(hex_colour: str) -> int:
        return sum(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))

    levels = [lightness(ITEM_COLOURS[f"caption_L{k}"]) for k in range(1, 5)]
    assert levels == sorted(levels, reverse=True)
