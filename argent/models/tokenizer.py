"""CLIP BPE tokenizer (open-clip-torch's vocabulary, offline), with argent's empty-text rule."""

from __future__ import annotations

import importlib.util
import sys
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
    return torch.stack([_token_row(text, context_length) for text in texts])


@lru_cache(maxsize=1 << 16)
def _token_row(text: str, context_length: int) -> torch.Tensor:
    # Training captions repeat (a shuffle buffer revisits every caption each epoch; hiershapes has a
    # few hundred distinct ones): BPE-encoding each one once saves most of the tokenisation time.
    # The row is read-only by convention: torch.stack copies it.
    return _tokenizer(context_length)([text], context_length=context_length)[0]
