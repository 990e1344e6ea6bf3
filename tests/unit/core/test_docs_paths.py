"""docs/architecture.md's "How to add" names the files a change touches: each named path must exist,
so the guide cannot silently go stale when a module moves."""

from __future__ import annotations

import re

from tests.fixtures import ROOT


def how_to_add_paths() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## How to add", 1)[1].split("\n## ", 1)[0]
    quoted = re.findall(r"`([^`\s]+)`", section)
    return sorted({q for q in quoted if "/" in q and re.search(r"\.(py|yaml|md|smk)$|/$", q)})


def test_every_path_the_guide_names_exists():
    paths = how_to_add_paths()
    assert len(paths) >= 15, paths  # the section is there and names files
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md 'How to add' names files that do not exist: {missing}"
