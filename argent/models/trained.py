"""The trained model of a run folder: its config read, its checkpoint checked against that config
(argent/runs/folder.py), the weights loaded into the model the config builds. Evaluation, the probe,
the cleaning's checkpoint scorer and tuning read a run's model here."""

from __future__ import annotations

from pathlib import Path

import torch

from argent.config import ExperimentConfig
from argent.device import require_device
from argent.models.dual_encoder import DualEncoder, build_model
from argent.runs import CheckpointError, RunFolder, check_hash, read_checkpoint, read_run_config
from argent.runs.layout import SUMMARY


def load_model(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[DualEncoder, ExperimentConfig]:
    """The trained model of a run folder, in eval mode, and its resolved config. The checkpoint must
    have been made under that config (same result hash)."""
    model, cfg, _ = load_run(run_dir, device)
    return model, cfg


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[DualEncoder, ExperimentConfig, str]:
    """``load_model`` and why the run is unfinished ("" when finished: its evaluation must say so)."""
    folder = RunFolder(Path(run_dir))
    require_device(device)
    cfg = read_run_config(folder.root)
    state = read_checkpoint(folder.checkpoint, device)
    check_hash(folder.checkpoint, state, cfg.result_hash(), folder.config)
    # NaN/inf weights (a scalar such as log_curv = inf too) would be evaluated as chance, or fail the
    # result's JSON write after the whole benchmark: refused here, naming the entry.
    bad = next((k for k, v in state["model"].items() if torch.is_tensor(v) and v.is_floating_point()
                and not bool(torch.isfinite(v).all())), None)
    if bad is not None:
        raise CheckpointError(f"{folder.checkpoint}: model entry {bad!r} holds NaN or infinite values; these "
                              f"weights cannot be evaluated. Retrain the run (delete {folder.root}), or resume it "
                              f"from an earlier checkpoint")
    model = build_model(cfg.model, cfg.variant.geometry)
    model.load_state_dict(state["model"])
    step = f"step {int(state.get('step', 0))} of {cfg.train.steps}"
    unfinished = "" if folder.summary.is_file() else f"run unfinished: no {SUMMARY} ({step})"
    return model.to(device).eval(), cfg, unfinished
