"""Range checks that the field types cannot express, made before any work: head and patch
arithmetic, the context length, device names, seeds, the warm-up against the training steps and
thread counts. Each failure is one ``ConfigError`` (or argparse error) naming the key; none of them
changes a field or a default, so no run's identity moves."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from argent.config.convert import ConfigError

DEVICE_RE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")
DEVICES = "cpu, cuda, cuda:<index> or mps"
MIN_CONTEXT = 3  # start and end tokens take two places: 2 would make every caption the same


def check_model_arithmetic(model: Any) -> None:
    """``ModelConfig`` values that build no model (a raw traceback at the first layer) or a useless one;
    ``from_dict`` prefixes ``model.<size>``."""
    for tower in ("vision", "text"):
        width, heads = getattr(model, f"{tower}_width"), getattr(model, f"{tower}_heads")
        if width % heads:
            raise ConfigError(f"{tower}_heads: {heads} does not divide {tower}_width {width}; each attention "
                              f"head takes width / heads channels: pick a divisor")
    if model.image_size % model.patch_size:
        raise ConfigError(f"image_size: {model.image_size} is not a multiple of patch_size {model.patch_size}; "
                          f"the patch grid must tile the image")
    if model.context_length < MIN_CONTEXT:
        raise ConfigError(f"context_length: {model.context_length} is out of range; must be >= {MIN_CONTEXT} (the "
                          f"start and end tokens take two places: fewer makes every caption identical)")


def check_device(key: str, device: str) -> str:
    """A device name torch knows, before the first tensor is made."""
    if not isinstance(device, str) or not DEVICE_RE.match(device):
        raise ConfigError(f"{key}: {device!r} is not a device; use {DEVICES}")
    return device


def check_seed(seed: Any, key: str) -> None:
    """Seeds seed torch and NumPy, which refuse a negative one mid-run."""
    if isinstance(seed, int) and not isinstance(seed, bool) and seed < 0:
        raise ConfigError(f"{key}: {seed} is out of range; seeds must be >= 0")


def check_schedule(warmup_steps: int, steps: int) -> None:
    """A warm-up longer than training never reaches the learning rate it warms up to (equal: it ends
    at the last step, which short test runs use)."""
    if warmup_steps > steps:
        raise ConfigError(f"optim.warmup_steps: {warmup_steps} is longer than train.steps ({steps}); the learning "
                          f"rate would never finish its warm-up: lower optim.warmup_steps (0: none)")


def threads(text: str, cpus: int | None = None) -> int:
    """argparse type of ``--threads``: 0 keeps torch's default; else 1 to the machine's logical CPUs
    (``os.cpu_count()``, ``cpus`` in a test). More threads than CPUs never speeds a step up, and a count
    far above them (``--threads 100000``) made OpenMP crash the trainer with SIGSEGV, and no message,
    after starving the machine's other processes of threads."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    limit = cpus if cpus is not None else (os.cpu_count() or 1)
    if value < 0 or value > limit:
        raise argparse.ArgumentTypeError(f"{value} is out of range; must be 1..{limit} (this machine's logical "
                                         f"CPUs, os.cpu_count()), or 0: torch's default")
    return value
