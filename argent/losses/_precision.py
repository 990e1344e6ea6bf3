"""Loss geometry runs in float32 (or float64) even inside a bf16/fp16 autocast region.

acosh/acos/asin near their singular points and exp-map norms lose everything in half precision
(MERU and HyCoCLIP compute every loss in float32 for the same reason; docs/method.md §1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor

_LOW = (torch.float16, torch.bfloat16)


def full(x: Tensor) -> Tensor:
    """``x`` in float32 if it is half precision; float32/float64 pass through unchanged."""
    return x.float() if x.dtype in _LOW else x


@contextlib.contextmanager
def no_autocast(device: torch.device) -> Iterator[None]:
    """Disable autocast on ``device`` so ops on float32 inputs are not cast back down."""
    with torch.autocast(device_type=device.type, enabled=False):
        yield
