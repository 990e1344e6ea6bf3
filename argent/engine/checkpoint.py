"""Atomic checkpoints with everything needed for an exact resume, and loading a run's model."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from argent.config import ExperimentConfig, experiment_from_resolved
from argent.io import atomic_output, atomic_write_text  # noqa: F401  (re-exported for the engine)
from argent.models import DualEncoder, build_model

CHECKPOINT = "checkpoint.pt"


def atomic_torch_save(obj: Any, path: Path) -> None:
    with atomic_output(path) as tmp:
        torch.save(obj, tmp)


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


def load_checkpoint(path: Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no checkpoint here; train the run first (argent train)")
    return torch.load(path, map_location=device, weights_only=True)


def read_run_config(run_dir: Path) -> ExperimentConfig:
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not a run folder (no config.yaml); train it with argent train")
    return experiment_from_resolved(yaml.safe_load(path.read_text()))


def load_model(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[DualEncoder, ExperimentConfig]:
    """The trained model of a run folder, in eval mode, and its resolved config."""
    run_dir = Path(run_dir)
    cfg = read_run_config(run_dir)
    model = build_model(cfg.model, cfg.variant.geometry)
    state = load_checkpoint(run_dir / CHECKPOINT, device)
    model.load_state_dict(state["model"])
    return model.to(device).eval(), cfg
