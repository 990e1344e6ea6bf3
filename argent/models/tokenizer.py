"""CLIP BPE tokenizer (open-clip-torch's vocabulary, offline), with argent's empty-text rule."""

from __future__ import annotations

from functools import lru_cache

import torch
from open_clip.tokenizer import SimpleTokenizer

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
    return _tokenizer(context_length)(list(texts), context_length=context_length)
