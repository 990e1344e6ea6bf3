"""Fault injection helpers: tiny configs, tiny runs on synthetic batches, folder checksums, and
``argent`` called in-process (its one error boundary included)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
from batches import stream  # noqa: E402

from argent.cli import main as argent_main  # noqa: E402
from argent.config import experiment_from_dict  # noqa: E402
from argent.engine.trainer import train  # noqa: E402

TINY = {"train": {"steps": 2, "batch_size": 8, "log_every": 1, "diagnostics_every": 1, "checkpoint_every": 2},
        "optim": {"warmup_steps": 1}, "tracking": {"enabled": False},
        "model": {"tiny": {"vision_width": 32, "vision_layers": 1, "vision_heads": 2, "text_width": 32,
                           "text_layers": 1, "text_heads": 2, "embed_dim": 32}},
        "variants_file": str(ROOT / "config" / "variants.yaml")}


def tiny_exp(variant: str = "meru", **train_overrides):
    cfg = {**TINY, "train": {**TINY["train"], **train_overrides}}
    return experiment_from_dict(cfg, variant, "tiny", 0, base_dir=ROOT)


def train_tiny(out: Path, variant: str = "meru", resume: str = "no", **train_overrides) -> dict:
    torch.set_num_threads(1)
    return train(tiny_exp(variant, **train_overrides), out, resume=resume, batches=stream)


def write_config(path: Path, **sections) -> Path:
    """A workflow config for ``argent train``: the tiny settings plus ``sections``."""
    cfg = {**TINY, "data": {"train_shards": str(path.parent / "no-such-data" / "shard-*.tar")}}
    for key, value in sections.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(cfg))
    return path


def nan_at(step_to_poison: int):
    """A batch hook that makes the loss not finite at one step (images of NaN)."""
    def hook(step, batch):
        if step == step_to_poison:
            batch = {**batch, "image": torch.full_like(batch["image"], float("nan"))}
        return batch
    return hook


def checksums(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` -> sha256: "no earlier output changed" is equality of two of these."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def argent(capsys):
    """``argent(*args) -> (exit code, stderr)``, through the real entry point."""
    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = argent_main([str(a) for a in args])
        return code, capsys.readouterr().err
    return run


@pytest.fixture(scope="session")
def _finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "runs" / "meru-tiny" / "seed0"
    train_tiny(out)
    return out


@pytest.fixture
def finished_run(_finished, tmp_path) -> Path:
    """A private copy of a finished tiny run (2 steps) in ``tmp_path/results/runs/meru-tiny/seed0``."""
    out = tmp_path / "results" / "runs" / "meru-tiny" / "seed0"
    shutil.copytree(_finished, out)
    return out
