"""Deterministic synthetic batches in the training-batch contract (for engine tests)."""

import torch

from argent.models import tokenize

CAPTIONS = ["a red square", "a blue circle left of a star", "a shape", "a green triangle", "a polygon",
            "a small striped red square", "a large blue ellipse", "a hexagon above a cross"]


def fixed_batch(n: int, seed: int = 0, context_length: int = 32) -> dict:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, len(CAPTIONS), (n,), generator=g).tolist()
    return {
        "image": torch.rand(n, 3, 64, 64, generator=g),
        "crop": torch.rand(n, 3, 64, 64, generator=g),
        "text": tokenize([CAPTIONS[i] for i in idx], context_length),
        "phrase": tokenize([CAPTIONS[(i + 3) % len(CAPTIONS)] for i in idx], context_length),
        "key": [f"k{i}" for i in range(n)],
    }


def stream(start: int, n: int = 8, seed: int = 0):
    """Batch k is fixed_batch(n, seed + k): restartable at any k."""
    k = start
    while True:
        yield fixed_batch(n, seed + k)
        k += 1
