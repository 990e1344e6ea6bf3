"""One DDP training step on a fixed global batch; rank 0 saves the loss and gradients.

Launched by tests/integration/engine/test_ddp.py with `python -m torch.distributed.run --nproc_per_node 2`.
"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist

from argent.config import experiment_from_dict
from argent.engine import distributed as dist_utils
from argent.engine.step import BatchEncoder
from argent.losses import Objective
from argent.models import build_model

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.fixtures
from tests.fixtures import ROOT, fixed_batch  # noqa: E402


def main(out: str, variant: str) -> None:
    cfg = experiment_from_dict({}, variant, "tiny", 0, base_dir=ROOT)
    ctx = dist_utils.setup("cpu")
    torch.manual_seed(0)
    model = build_model(cfg.model, cfg.variant.geometry)
    encoder = ctx.wrap(BatchEncoder(model, cfg.variant.use_boxes))
    batch = fixed_batch(8)
    per = 8 // ctx.world_size
    local = {k: v[ctx.rank * per:(ctx.rank + 1) * per] for k, v in batch.items() if torch.is_tensor(v)}
    emb, curv, scale = encoder(local)
    loss = Objective(cfg.variant)(emb, curv=curv, logit_scale=scale, geometry=cfg.variant.geometry).total
    loss.backward()
    mean_loss = loss.detach().clone()
    dist.all_reduce(mean_loss)
    mean_loss /= ctx.world_size
    if ctx.rank == 0:
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        torch.save({"loss": mean_loss, "grads": grads}, out)
    ctx.cleanup()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
