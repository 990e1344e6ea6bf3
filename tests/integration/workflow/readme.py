"""The README's fenced commands, in the order a reader meets them, as a test runs them.

The first look (`config/quick.yaml`, `results/quick`, experiment `argent-quick`) is run on the smoke
config in tests (minutes instead of an hour): ``on_smoke`` rewrites exactly those three names.
"""

from __future__ import annotations

import re
from pathlib import Path

FENCE = re.compile(r"^( *)```(bash|python)\n(.*?)^\1```", re.S | re.M)


def blocks(readme: Path) -> list[tuple[str, str]]:
    """(language, text) of every ```bash and ```python block, in order; indentation removed."""
    out = []
    for indent, lang, body in FENCE.findall(readme.read_text()):
        lines = [line[len(indent):] if line.startswith(indent) else line for line in body.splitlines()]
        out.append((lang, "\n".join(lines).strip()))
    return out


def on_smoke(text: str) -> str:
    return (text.replace("config/quick.yaml", "config/smoke.yaml").replace("results/quick", "results/smoke")
            .replace("argent-quick", "argent-smoke"))


def commands(text: str) -> list[str]:
    """A bash block's commands: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]
