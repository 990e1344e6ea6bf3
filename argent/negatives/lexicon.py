"""Word lists behind the lexicon tagger and the attribute operators.

Closed-class words (determiners, numbers, pronouns, prepositions, conjunctions, auxiliaries,
common adverbs) are listed by hand because WordNet holds only open-class words. Attribute
families group adjectives whose values exclude each other on one object (a square is not both
red and blue); each family is a tuple of *value groups*, and words in one group are near-synonyms
(``gray``/``grey``, ``small``/``little``), so a replacement always leaves its group: swapping
``gray`` for ``grey`` would give a caption that is still true.
"""

from __future__ import annotations

DETERMINERS = frozenset(
    "a an the this that these those some any each every no another its his her their our my your "
    "several many few both all either neither much more most such what which whose".split()
)
NUMBERS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "twenty thirty hundred dozen dozens".split()
)
PRONOUNS = frozenset(
    "i you he she it we they me him them us someone somebody something anyone anything everyone "
    "everything nobody nothing who whom himself herself itself themselves myself yourself ourselves "
    "eachother mine yours hers ours theirs".split()
)
PREPOSITIONS = frozenset(
    "of in on at by with from to into onto over under above below near beside besides behind "
    "between among amongst through across along alongside around against inside outside toward "
    "towards up down off out about after before during for like past upon within without beneath "
    "underneath atop via per throughout amid despite except than".split()
)
CONJUNCTIONS = frozenset("and or but nor so yet while as because if then whereas although though".split())
AUXILIARIES = frozenset(
    "is are was were be been being am has have had do does did can could will would shall should "
    "may might must 's 're".split()
)
ADVERBS = frozenset(
    "very too also just not there here together almost nearly quite really still only even ever "
    "never always often again away how when where why partially fully".split()
)
# Spatial words that name a relation, not an object, in captions ("left of", "in front of").
RELATION_WORDS = frozenset("left right front behind above below beside next atop underneath beneath".split())
# Multi-token relation phrases; every token in a match is tagged as a relation.
RELATION_PHRASES: tuple[tuple[str, ...], ...] = (
    ("on", "top", "of"),
    ("in", "front", "of"),
    ("next", "to"),
    ("close", "to"),
    ("left", "of"),
    ("right", "of"),
)

# family -> value groups (near-synonyms together). The first word of a group is what a
# replacement writes.
ATTRIBUTE_FAMILIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "colour": (
        ("red",), ("orange",), ("yellow",), ("green",), ("blue",), ("purple", "violet"), ("pink",),
        ("brown",), ("black",), ("white",), ("gray", "grey"), ("cyan", "turquoise", "teal"),
        ("magenta",), ("beige", "tan"), ("maroon",), ("navy",), ("golden", "gold"), ("silver",),
    ),
    "size": (
        ("small", "little", "tiny", "miniature", "mini"),
        ("medium",),
        ("large", "big", "huge", "giant", "enormous", "massive"),
    ),
    "material": (
        ("wooden", "wood"), ("metal", "metallic"), ("plastic",), ("glass",), ("stone",),
        ("paper",), ("leather",), ("woolen", "wool", "woollen"), ("cotton",), ("silk",),
        ("steel",), ("brick",), ("ceramic", "porcelain"), ("rubber",), ("cardboard",),
        ("marble",),
    ),
    "fill": (
        ("striped",), ("solid", "filled", "plain"), ("outlined", "hollow"),
        ("dotted", "spotted", "polka-dotted"), ("checkered", "chequered"), ("hatched",),
    ),
}


def _family_index() -> dict[str, tuple[str, int]]:
    index: dict[str, tuple[str, int]] = {}
    for family, groups in ATTRIBUTE_FAMILIES.items():
        for g, group in enumerate(groups):
            for word in group:
                if word in index:  # a word in two families would make replacements ambiguous
                    raise ValueError(f"attribute word {word!r} is listed twice")
                index[word] = (family, g)
    return index


FAMILY_OF: dict[str, tuple[str, int]] = _family_index()
"""word -> (family, value-group index)."""


def family_alternatives(word: str) -> list[str]:
    """Words of the same family outside ``word``'s value group (first word of each group)."""
    if word not in FAMILY_OF:
        return []
    family, group = FAMILY_OF[word]
    return [g[0] for i, g in enumerate(ATTRIBUTE_FAMILIES[family]) if i != group]


# Words that take "a" although spelled with a vowel, or "an" although spelled with a consonant.
A_BEFORE_VOWEL_PREFIXES = ("uni", "use", "usu", "uti", "eu", "one", "once", "ewe", "ure")
AN_BEFORE_CONSONANT_PREFIXES = ("hour", "honest", "honor", "honour", "heir")


def indefinite_article(word: str) -> str:
    """'a' or 'an' for the word that follows, by spelling with the common exceptions."""
    w = word.lower()
    if w.startswith(AN_BEFORE_CONSONANT_PREFIXES):
        return "an"
    if w.startswith(A_BEFORE_VOWEL_PREFIXES):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"
