"""An HTML page beside each markdown table (``<name>.md`` -> ``<name>.html``): what the Snakemake report
shows inline (a ``.md`` there is only a file to download). The markdown is the table's one source; the
page renders it as it is (headings, paragraphs, lists, pipe tables), with markup in the text escaped.
"""

from __future__ import annotations

import html
from pathlib import Path

from argent.io import atomic_write_text

# Small and self-contained: the report embeds the page as a data URI, so nothing may be fetched.
STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tbody tr:nth-child(even) { background: #fafafa; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def markdown_html(markdown: str, title: str) -> str:
    """A whole HTML page of ``markdown`` (CommonMark with pipe tables; raw HTML in it is escaped)."""
    from markdown_it import MarkdownIt  # rich's markdown parser (a dependency of rich); only this page needs it

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def write_html(md_path: Path) -> Path:
    """Write ``<name>.html`` beside the markdown table ``md_path``; returns its path."""
    out = md_path.with_suffix(".html")
    atomic_write_text(out, markdown_html(md_path.read_text(), md_path.stem))
    return out
