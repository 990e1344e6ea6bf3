"""The device a command asks for, checked before any work (``argent train``, ``argent check``, every
reader of a trained model): a shared utility of the stages that run torch."""

from __future__ import annotations

import torch

from argent.io import ArgentError


def require_device(device: str | torch.device) -> None:
    """Fail before any work when the asked device is not there."""
    try:
        kind = torch.device(device).type
    except RuntimeError:  # torch's message lists every device type it knows; ours names the usual ones
        raise ArgentError(f"device {str(device)!r}: not a device; use cpu, cuda, cuda:<index> or mps") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ArgentError(f"device {str(device)!r}: no CUDA device is visible; use --device cpu / train.device: cpu")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ArgentError(f"device {str(device)!r}: MPS is not available; use cpu")
