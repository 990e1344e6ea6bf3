"""Zero-shot prompt templates: named sets and the check of a written list. Torch-free: the benchmark
entries (``argent.evaluation.benchmarks``) validate ``templates`` when the workflow parses its config."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["TEMPLATE_SETS", "resolve_templates"]

TEMPLATE_SETS: dict[str, tuple[str, ...]] = {
    "default": ("a photo of a {}.", "a drawing of a {}.", "an image of a {}."),
    # The 7 ImageNet templates of the reference evaluator (docs/method.md §6.1).
    "imagenet": (
        "i took a picture : itap of a {}.",
        "pics : a bad photo of the {}.",
        "pics : a origami {}.",
        "pics : a photo of the large {}.",
        "pics : a {} in a video game.",
        "pics : art of the {}.",
        "pics : a photo of the small {}.",
    ),
}


def resolve_templates(templates: str | Sequence[str], where: str = "templates") -> tuple[str, ...]:
    """A named template set (``TEMPLATE_SETS``) or an explicit list; each must hold one ``{}``."""
    if isinstance(templates, str):
        if templates not in TEMPLATE_SETS:
            raise ValueError(f"{where}: unknown template set {templates!r}; known: {sorted(TEMPLATE_SETS)} or a list")
        return TEMPLATE_SETS[templates]
    out = tuple(templates)
    if not out:
        raise ValueError(f"{where}: empty template list")
    for i, template in enumerate(out):
        if not isinstance(template, str) or template.count("{}") != 1:
            raise ValueError(f"{where}[{i}]: {template!r} must be a string with exactly one '{{}}'")
    return out
