"""The learning-rate shape shared by training and the probe: linear warm-up, then half-cosine to 0.

Its own module so that stages other than training (the probe's projector) can use it without
importing the training engine.
"""

from __future__ import annotations

import math


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up to 1 over ``warmup`` steps, then cos²(π/2 · progress) down to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return math.cos(0.5 * math.pi * min(progress, 1.0)) ** 2
