"""Scorers and verifiers that look at the pixels: an argent checkpoint, open_clip, Hugging Face.

- ``checkpoint:<run dir>`` — an argent run (``argent.models.trained.load_model``): images squeezed
  to the model's size (retrieval protocol), cosine or −d.
- ``open_clip:<arch>:<checkpoint file>`` — an open_clip model from a local checkpoint (optional).
- ``hf:<folder>`` — a Hugging Face dual encoder with ``get_image_features``/``get_text_features``
  (CLIP, SigLIP, ...) saved in a local folder (optional).
Verifier (``make_verifier(spec)``): ``hf:<folder>`` holding a ``BlipForImageTextRetrieval`` (BLIP-ITM);
its match probability replaces the scorer's alignment score.


The optional packages (open_clip, transformers) are imported only when such a scorer is built:
they are heavy and most runs use the text scorer. Absent weights raise ``ScorerUnavailable``
with what to put where.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from argent import geometry
from argent.cleaning.scorer_base import Scorer, ScorerUnavailable, Verifier, cosine, normalise
from argent.data.formats.hierarcaps import HierarCapsSample
from argent.data.images import load_image, squeeze_transform
from argent.models.tokenizer import tokenize
from argent.models.trained import load_model


def _load_images(samples: Sequence[HierarCapsSample], transform):
    """Decoded and transformed images as one (B, 3, S, S) tensor; a corrupt file raises BadDataError."""
    missing = [s.id for s in samples if s.image_path is None]
    if missing:
        raise ScorerUnavailable(f"this scorer needs images; samples {missing[:5]} have none (pass --images)")
    return torch.stack([transform(load_image(s.image_path)) for s in samples])


class CheckpointScorer(Scorer):
    """An argent ``DualEncoder``: ``model.similarity`` (cosine or −d), images squeezed (docs/method.md §6.2)."""

    def __init__(self, model, device: str = "cpu", batch_size: int = 32, spec: str = "checkpoint") -> None:
        self.spec = spec
        self.model = model.to(device).eval()
        self.device = device
        self.batch_size = batch_size

    @classmethod
    def from_run_dir(cls, run_dir: str | Path, device: str = "cpu", batch_size: int = 32) -> "CheckpointScorer":
        try:
            model, _ = load_model(run_dir, device=device)
        except FileNotFoundError as err:
            raise ScorerUnavailable(f"checkpoint scorer: {err}") from None
        return cls(model, device, batch_size, spec=f"checkpoint:{run_dir}")

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        transform = squeeze_transform(self.model.config.image_size)
        out = []
        with torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                images = _load_images(samples[start:start + self.batch_size], transform).to(self.device)
                out.append(self.model.encode_image(images, project=True).float().cpu().numpy())
        return np.concatenate(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                tokens = tokenize(list(texts[start:start + self.batch_size]), self.model.config.context_length)
                out.append(self.model.encode_text(tokens.to(self.device), project=True).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.model.config.embed_dim), np.float32)

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            s = self.model.similarity(torch.from_numpy(x).to(self.device), torch.from_numpy(y).to(self.device))
        return s.double().cpu().numpy()

    def text_radius(self, text_emb: np.ndarray) -> np.ndarray:
        if self.model.geometry == "lorentz":  # root = origin O, radius = d(O, x) (docs/method.md §6.5)
            with torch.no_grad():
                return geometry.dist0(torch.from_numpy(text_emb).double(), self.model.curv().double()).numpy()
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
        import open_clip  # optional and heavy: only when this scorer is named
        if arch not in open_clip.list_models():
            raise ScorerUnavailable(f"open_clip scorer: unknown architecture {arch!r}; see open_clip.list_models()")
        model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=str(checkpoint), device=device)
        self.model, self.preprocess = model.eval(), preprocess
        self.tokenizer = open_clip.get_tokenizer(arch)
        self.device, self.batch_size = device, batch_size

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                images = _load_images(samples[start:start + self.batch_size], self.preprocess).to(self.device)
                out.append(self.model.encode_image(images).float().cpu().numpy())
        return normalise(np.concatenate(out))

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(list(texts[start:start + self.batch_size])).to(self.device)
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
        return normalise(np.concatenate(out))

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return cosine(x, y)


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
        from transformers import AutoModel, AutoProcessor  # optional and heavy: only when named

        self.model = AutoModel.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        if not (hasattr(self.model, "get_image_features") and hasattr(self.model, "get_text_features")):
            raise ScorerUnavailable(f"hf scorer: {type(self.model).__name__} in {folder} is not a dual encoder "
                                    "(no get_image_features/get_text_features); use it as --verifier if it is BLIP-ITM")
        self.device, self.batch_size = device, batch_size

    def embed_images(self, samples: Sequence[HierarCapsSample]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                batch = samples[start:start + self.batch_size]
                inputs = self.processor(images=[load_image(s.image_path) for s in batch], return_tensors="pt")
                feats = self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
                out.append(_features(feats).float().cpu().numpy())
        return normalise(np.concatenate(out))

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                inputs = self.processor(text=list(texts[start:start + self.batch_size]), padding=True,
                                        truncation=True, return_tensors="pt").to(self.device)
                out.append(_features(self.model.get_text_features(**inputs)).float().cpu().numpy())
        return normalise(np.concatenate(out))

    def similarity(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return cosine(x, y)


def _features(output):
    """Newer transformers may return a model output instead of a tensor."""
    return output if hasattr(output, "float") else output.pooler_output


class HFITMVerifier(Verifier):
    """BLIP image–text matching head (``BlipForImageTextRetrieval``): P(match) per pair."""

    def __init__(self, folder: str | Path, device: str = "cpu", batch_size: int = 16) -> None:
        folder = _hf_folder(folder, "hf verifier")
        self.spec = f"hf:{folder}"
        from transformers import AutoProcessor, BlipForImageTextRetrieval  # optional and heavy

        self.model = BlipForImageTextRetrieval.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        self.device, self.batch_size = device, batch_size

    def score_pairs(self, samples: Sequence[HierarCapsSample], texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(samples), self.batch_size):
                stop = start + self.batch_size
                inputs = self.processor(images=[load_image(s.image_path) for s in samples[start:stop]],
                                        text=list(texts[start:stop]), padding=True, truncation=True,
                                        return_tensors="pt").to(self.device)
                logits = self.model(**inputs, use_itm_head=True).itm_score
                out.append(logits.softmax(-1)[:, 1].double().cpu().numpy())
        return np.concatenate(out)
