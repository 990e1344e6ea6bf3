"""Atomic checkpoints with everything needed for an exact resume. Reading them (and the run folder's
layout) belongs to ``argent.runs``."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from argent.io import ArgentError, atomic_output, os_error_in


class CheckpointWriteError(ArgentError, OSError):
    """torch.save failed part-way through a checkpoint. Its own error names no cause: a full file
    system reads ``[enforce fail at inline_container.cc] unexpected pos 704 vs 598``."""


def atomic_torch_save(obj: Any, path: Path) -> None:
    """Write to a temp file, fsync, rename: a kill or a full disk leaves the old checkpoint intact.

    Raises ``CheckpointWriteError`` (with the free space left) when torch's writer fails, and an
    ``OSError`` naming ``path`` when the OS refuses the write (flush, fsync: no file name of its own)."""
    path = Path(path)
    try:
        with atomic_output(path) as tmp:
            with open(tmp, "wb") as f:
                torch.save(obj, f)
                f.flush()
                os.fsync(f.fileno())
    except RuntimeError as err:
        cause = os_error_in(err)  # torch's writer wraps the OS's error (ENOSPC) in its own RuntimeError
        if cause is not None and cause.errno is not None:
            raise OSError(cause.errno, cause.strerror, str(path)) from err
        free = shutil.disk_usage(path.parent).free / 2**20
        raise CheckpointWriteError(
            f"{path}: writing the checkpoint failed ({str(err).splitlines()[0][:160]}) with {free:.1f} MiB free on "
            f"its file system: most often a full disk; free space there and re-run (the previous checkpoint is "
            f"intact)") from err
    except OSError as err:
        if err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise


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
