"""The only trained part of the probe: a 2-layer GELU MLP from frozen image features into the text
tower's space, with a learned yes/no threshold, and its training loop (docs/probe.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from argent.probe.config import ProbeOptions
from argent.probe.protocol import Questions
from argent.schedule import lr_factor

SCORING = (
    "learned threshold: logit = exp(log s)·(similarity(lift_text(P(x)), q) − τ); Yes iff logit > 0; "
    "P = 2-layer GELU MLP; similarity = the model's (cosine or −Lorentz distance)"
)


@dataclass(frozen=True)
class TextSpace:
    """Where the projector lands: ``lift`` (B, D) tangent -> point; ``similarity`` (B1, D), (B2, D) -> (B1, B2)."""

    lift: Callable[[Tensor], Tensor]
    similarity: Callable[[Tensor, Tensor], Tensor]
    geometry: str


def euclidean_space() -> TextSpace:
    """CLIP-like space (unit vectors, cosine), for synthetic embeddings."""
    return TextSpace(lambda v: nn.functional.normalize(v, dim=-1), lambda x, y: x @ y.T, "euclidean")


def model_text_space(model: Any) -> TextSpace:
    """The model's text space: ``lift_text`` and ``similarity`` (cosine or −d)."""
    return TextSpace(model.lift_text, model.similarity, model.geometry)


class Projector(nn.Module):
    """2-layer GELU MLP to the text tower's tangent space, plus the yes/no read-out (scale s, threshold τ)."""

    def __init__(self, d_in: int, d_out: int, hidden: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))
        self.log_scale = nn.Parameter(torch.zeros(()))
        self.threshold = nn.Parameter(torch.zeros(()))

    def embed(self, x: Tensor, space: TextSpace) -> Tensor:
        """(B, d_in) image features -> (B, D) points in the text space."""
        return space.lift(self.mlp(x))

    def logits(self, sims: Tensor) -> Tensor:
        return self.log_scale.exp() * (sims - self.threshold)


def _paired_sims(space: TextSpace, points: Tensor, queries: Tensor) -> Tensor:
    """(B, D), (B, D) -> (B,): the diagonal of the model's pairwise similarity (B is a small batch)."""
    return space.similarity(points, queries).diagonal()


def train_projector(
    features: Tensor,
    concept_emb: Tensor,
    questions: Questions,
    space: TextSpace,
    cfg: ProbeOptions,
    seed: int,
) -> tuple[Projector, dict[str, float]]:
    """Train a fresh projector on ``questions``; features (N, d_in), concept_emb (C, D) on one device."""
    device = features.device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        proj = Projector(features.shape[1], concept_emb.shape[1], cfg.hidden or concept_emb.shape[1]).to(device)
    image = torch.as_tensor(questions.image, device=device)
    concept = torch.as_tensor(questions.concept, device=device)
    target = torch.as_tensor(questions.answer, device=device, dtype=torch.float32)
    n = len(questions)
    if n == 0:
        raise ValueError("probe: no training question (is the training split empty?)")
    with torch.no_grad():  # read-out init: balanced first predictions whatever the geometry
        sims = torch.cat([
            _paired_sims(space, proj.embed(features[image[s : s + 256]], space), concept_emb[concept[s : s + 256]])
            for s in range(0, n, 256)
        ])
        proj.threshold.fill_(sims.mean())
        # clamp: identical starting similarities must not give s = ∞
        proj.log_scale.fill_(-torch.log(sims.std(unbiased=False).clamp(min=1e-3)))
    steps_per_epoch = math.ceil(n / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    warmup = math.ceil(cfg.warmup * total)
    decay = [p for p in proj.mlp.parameters() if p.ndim > 1]
    no_decay = [p for p in proj.parameters() if all(p is not d for d in decay)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, warmup, total))
    generator = torch.Generator().manual_seed(seed)
    loss_fn = nn.BCEWithLogitsLoss()
    epoch_loss = float("nan")
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=generator).to(device)
        running = 0.0
        for s in range(0, n, cfg.batch_size):
            b = order[s : s + cfg.batch_size]
            points = proj.embed(features[image[b]], space)
            logits = proj.logits(_paired_sims(space, points, concept_emb[concept[b]]))
            loss = loss_fn(logits, target[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(proj.parameters(), cfg.grad_clip)
            opt.step()
            sched.step()
            running += loss.item() * len(b)
        epoch_loss = running / n
    history = {"final_loss": epoch_loss, "steps": total, "threshold": proj.threshold.item(),
               "scale": proj.log_scale.exp().item()}
    return proj, history


@torch.no_grad()
def predict(
    proj: Projector, features: Tensor, concept_emb: Tensor, questions: Questions, space: TextSpace, chunk: int = 4096
) -> np.ndarray:
    """(Q,) predicted answers (1 Yes / 0 No) for ``questions`` over ``features`` (N, d_in)."""
    out = np.zeros(len(questions), dtype=np.int8)
    if len(questions) == 0:
        return out
    images = np.unique(questions.image)
    row = {int(i): r for r, i in enumerate(images)}
    sims = []
    for s in range(0, len(images), chunk):
        idx = torch.as_tensor(images[s : s + chunk], device=features.device)
        sims.append(space.similarity(proj.embed(features[idx], space), concept_emb).float().cpu())
    table = torch.cat(sims)  # (unique images, C)
    rows = torch.as_tensor([row[int(i)] for i in questions.image])
    chosen = table[rows, torch.as_tensor(questions.concept)]
    return (proj.logits(chosen.to(proj.threshold.device)) > 0).cpu().numpy().astype(np.int8)
