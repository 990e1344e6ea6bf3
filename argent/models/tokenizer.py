"""CLIP BPE tokenizer (open-clip-torch's vocabulary, offline), with argent's empty-text rule."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import torch


def _open_clip_tokenizer_module() -> ModuleType:
    """open_clip's ``tokenizer.py`` without the package ``__init__``.

    Importing ``open_clip`` builds its whole model zoo (timm, hub clients): seconds per process,
    paid by every `argent` job. ``tokenizer.py`` has no relative imports, so it loads on its own;
    the vocabulary file beside it is the same one open_clip uses.
    """
    if "open_clip.tokenizer" in sys.modules:
        return sys.modules["open_clip.tokenizer"]
    spec = importlib.util.find_spec("open_clip")  # locates the package without executing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("open-clip-torch is not installed (pip install open-clip-torch)")
    path = Path(list(spec.submodule_search_locations)[0]) / "tokenizer.py"
    module_spec = importlib.util.spec_from_file_location("argent._open_clip_tokenizer", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


SimpleTokenizer = _open_clip_tokenizer_module().SimpleTokenizer

VOCAB_SIZE = 49408


@lru_cache(maxsize=8)
def _tokenizer(context_length: int) -> SimpleTokenizer:
    return SimpleTokenizer(context_length=context_length)


def tokenize(texts: str | list[str], context_length: int = 77) -> torch.Tensor:
    """Texts -> token ids (N, context_length), int64.

    Lower-cased and whitespace-cleaned by open_clip; a caption longer than the context is cut
    with the end-of-text token kept last, so the text feature (taken at the end-of-text token,
    the largest id) always exists.
    """
    if isinstance(texts, str):
        texts = [texts]
    if not texts:
        return torch.zeros(0, context_length, dtype=torch.long)
    rows = [_token_row(text, context_length) for text in texts]
    for tally in _TALLIES:
        tally.update(text for text, (_, cut) in zip(texts, rows) if cut)
    return torch.stack([row for row, _ in rows])


@lru_cache(maxsize=1 << 16)
def _token_row(text: str, context_length: int) -> tuple[torch.Tensor, bool]:
    """(token ids, whether the text was cut to fit). Training captions repeat (a shuffle buffer
    revisits every caption each epoch): BPE-encoding each one once saves most of the tokenisation
    time. The row is read-only by convention: torch.stack copies it."""
    tokenizer = _tokenizer(context_length)
    row = tokenizer([text], context_length=context_length)[0]
    # Only a row that ends in the end-of-text token can have been cut (start + text + end > context).
    cut = int(row[-1]) == tokenizer.eot_token_id and len(tokenizer.encode(text)) + 2 > context_length
    return row, cut


_TALLIES: list[set[str]] = []


@contextmanager
def counting_truncations() -> Iterator[set[str]]:
    """Collect, into the yielded set, every distinct text that ``tokenize`` cuts to the context
    length while the block is open (in this process): a silent loss the caller reports."""
    tally: set[str] = set()
    _TALLIES.append(tally)
    try:
        yield tally
    finally:
        _TALLIES.remove(tally)
