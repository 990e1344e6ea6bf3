"""Atomic checkpoints with everything needed for an exact resume. Reading them (and the run folder's
layout) belongs to ``argent.runs``."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from argent.io import atomic_output


def atomic_torch_save(obj: Any, path: Path) -> None:
    """Write to a temp file, fsync, rename: a kill or a full disk leaves the old checkpoint intact."""
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())


def rng_state() -> dict[str, Any]:
    """RNG states as tensors and plain lists, so ``weights_only=True`` can load them."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": [np_state[0], np_state[1].tolist(), *np_state[2:]],
        "python": list(random.getstate()[1]),
        "python_gauss": random.getstate()[2],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np_state = state["numpy"]
    np.random.set_state((np_state[0], np.asarray(np_state[1], dtype=np.uint32), *np_state[2:]))
    random.setstate((3, tuple(state["python"]), state["python_gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
