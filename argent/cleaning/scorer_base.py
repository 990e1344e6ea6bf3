"""The reference-scorer interface of the cleaning stage, and what every scorer shares.

A ``Scorer`` embeds images (given as ``HierarCapsSample``s, so a text-only scorer can stand text in
for the picture) and texts, and scores any two embedding sets against each other (larger = more
alike). ``Verifier``s score (image, text) pairs directly and are optional. ``EmbeddingCache``
embeds each distinct text and image once per run; ``similarity_chunked`` bounds the memory of a
full score matrix. The scorers themselves live in ``text_scorer`` and ``image_scorers``;
``scorers.make_scorer`` builds one from its spec.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from argent.data.formats.hierarcaps import HierarCapsSample
from argent.io import ArgentError

DEFAULT_BATCH = 64
SIM_CHUNK = 1024  # rows per similarity block: bounds memory at SIM_CHUNK × M floats
EMBED_CHUNK = 4096  # items per embedding call (the scorer batches inside)
# The forms of a scorer spec (``scorers.make_scorer``); here, torch-free, for ``argent clean --help``.
SCORER_SPECS = "text | checkpoint:<run dir> | open_clip:<arch>:<checkpoint file> | hf:<model folder>"


class ScorerUnavailable(ArgentError, RuntimeError):
    """A configured scorer cannot be built (weights or package absent); the message says what to do."""


class Scorer(ABC):
    """Embeds images and texts; scores embedding sets. Embeddings are float32 numpy arrays (n, D)."""

    spec: str = ""

    @abstractmethod
    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        """(N,) samples -> (N, D) image embeddings."""

    @abstractmethod
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(M,) texts -> (M, D) text embeddings."""

    @abstractmethod
    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(N, D), (M, D) -> (N, M) float64 scores, larger = more alike (image–text or image–image)."""

    def paired_similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Row i of x with row i of y: (N, D), (N, D) -> (N,)."""
        out = np.empty(len(x), dtype=np.float64)
        for start in range(0, len(x), SIM_CHUNK):
            stop = start + SIM_CHUNK
            out[start:stop] = np.diagonal(self.similarity(x[start:stop], y[start:stop]))
        return out

    def text_radius(self, text_emb: np.ndarray) -> np.ndarray:
        """Radius of each text for the HierarCaps protocol (docs/method.md §6.5): (M, D) -> (M,).

        Euclidean default: ‖e − r‖ with r the normalised embedding of the empty string.
        """
        root = normalise(self.embed_texts([""]).astype(np.float64))
        return np.linalg.norm(normalise(text_emb.astype(np.float64)) - root, axis=1)

    def image_proxy(self, sample: HierarCapsSample) -> str:
        """What represents the sample's image for this scorer (recorded per sample)."""
        return "image"

    def describe(self) -> dict:
        return {"spec": self.spec, "class": type(self).__name__}


class Verifier(ABC):
    """Scores (image, text) pairs directly, e.g. an image–text matching head."""

    spec: str = ""

    @abstractmethod
    def score_pairs(self, samples: Sequence[HierarCapsSample], texts: Sequence[str]) -> np.ndarray:
        """Sample i with text i: (N,), (N,) -> (N,) float64, larger = better match."""


def normalise(x: np.ndarray) -> np.ndarray:
    # The floor keeps an all-zero row (nothing to average) at zero instead of NaN.
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def cosine(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return normalise(x.astype(np.float64)) @ normalise(y.astype(np.float64)).T


def similarity_chunked(scorer: Scorer, x: np.ndarray, y: np.ndarray, chunk: int = SIM_CHUNK) -> np.ndarray:
    """``scorer.similarity`` computed SIM_CHUNK rows at a time: (N, D), (M, D) -> (N, M)."""
    if len(x) == 0:
        return np.zeros((0, len(y)))
    return np.concatenate([scorer.similarity(x[s:s + chunk], y) for s in range(0, len(x), chunk)], axis=0)


class TextCache:
    """Per-run, in-memory cache: each distinct text is embedded once by ``embed``.

    New texts go to ``embed`` ``chunk`` at a time (the encoder batches inside): large calls let
    sentence-transformers sort texts by length across the whole chunk, so batches pad little,
    while memory stays bounded by the chunk.
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], chunk: int = EMBED_CHUNK) -> None:
        self._embed = embed
        self.chunk = chunk
        self._texts: dict[str, np.ndarray] = {}

    def texts(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._texts))
        for start in range(0, len(todo), self.chunk):
            batch = todo[start:start + self.chunk]
            for text, emb in zip(batch, self._embed(batch)):
                self._texts[text] = emb
        return np.stack([self._texts[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


class EmbeddingCache(TextCache):
    """A scorer's texts and sample images, each embedded once per run (``chunk`` items per call)."""

    def __init__(self, scorer: Scorer, chunk: int = EMBED_CHUNK) -> None:
        super().__init__(scorer.embed_texts, chunk)
        self.scorer = scorer
        self._images: dict[str, np.ndarray] = {}

    def images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        todo = [s for s in dict.fromkeys(samples) if s.id not in self._images]
        for start in range(0, len(todo), self.chunk):
            batch = todo[start:start + self.chunk]
            for sample, emb in zip(batch, self.scorer.embed_images(batch)):
                self._images[sample.id] = emb
        return np.stack([self._images[s.id] for s in samples])
