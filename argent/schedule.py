"""The learning-rate shape shared by training and the probe: linear warm-up, then half-cosine to 0
(the MERU/HyCoCLIP recipe), or warm-up, a constant stretch and a linear decay to 0 over the last
``decay_fraction`` of the steps ("warmup-stable-decay", WSD).

Its own module so that stages other than training (the probe's projector) can use it without
importing the training engine.
"""

from __future__ import annotations

import math


def lr_factor(step: int, warmup: int, total: int, decay_fraction: float | None = None) -> float:
    """Linear warm-up to 1 over ``warmup`` steps, then cos²(π/2 · progress) down to 0 at ``total``;
    with ``decay_fraction`` (0, 1], 1 until the last ``decay_fraction · total`` steps, then linearly
    down to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    if decay_fraction is not None:
        decay_steps = max(1, round(decay_fraction * total))
        start = max(warmup, total - decay_steps)
        return 1.0 if step < start else max(0.0, (total - step) / max(1, total - start))
    progress = (step - warmup) / max(1, total - warmup)
    return math.cos(0.5 * math.pi * min(progress, 1.0)) ** 2
