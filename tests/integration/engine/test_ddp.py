"""DDP on CPU (gloo, two processes) equals one process on the same global batch."""

import os
import subprocess
import sys

import pytest
import torch

from argent.config import experiment_from_dict
from argent.engine.step import BatchEncoder
from argent.losses import Objective
from argent.models import build_model
from tests.fixtures import ROOT, SCRIPTS, fixed_batch


def single_process(variant: str):
    cfg = experiment_from_dict({}, variant, "tiny", 0, base_dir=ROOT)
    torch.manual_seed(0)
    model = build_model(cfg.model, cfg.variant.geometry)
    batch = {k: v for k, v in fixed_batch(8).items() if torch.is_tensor(v)}
    emb, curv, scale = BatchEncoder(model, cfg.variant.use_boxes)(batch)
    loss = Objective(cfg.variant)(emb, curv=curv, logit_scale=scale, geometry=cfg.variant.geometry).total
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("variant", ["argent", "clip"])
def test_two_gloo_ranks_match_one_process(tmp_path, variant):
    out = tmp_path / "ddp.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(SCRIPTS / "ddp_step.py"), str(out), variant]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ddp = torch.load(out, weights_only=True)
    loss, grads = single_process(variant)
    assert torch.allclose(ddp["loss"], loss, rtol=1e-5, atol=1e-6)
    assert set(ddp["grads"]) == set(grads)
    worst = max(((ddp["grads"][n] - g).abs().max() / g.abs().max().clamp(min=1e-12)).item() for n, g in grads.items())
    assert worst < 1e-4, f"largest relative gradient difference {worst:.2e}"
