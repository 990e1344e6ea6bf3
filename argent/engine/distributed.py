"""Process-group setup for `torchrun` (gloo on CPU, nccl on CUDA); a no-op for one process."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn


@dataclass
class DistContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    owns_group: bool

    def wrap(self, module: nn.Module) -> nn.Module:
        if self.world_size == 1:
            return module
        ids = [self.local_rank] if self.device.type == "cuda" else None
        # broadcast_buffers=False: the model has no running statistics (as in MERU/HyCoCLIP).
        return nn.parallel.DistributedDataParallel(module, device_ids=ids, broadcast_buffers=False)

    def cleanup(self) -> None:
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()


def setup(device: str) -> DistContext:
    """Read torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK) and join the process group."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError("train.device is 'cuda' but no CUDA device is visible; set train.device: cpu")
        dev = torch.device("cuda", local) if world > 1 else torch.device(device)
        torch.cuda.set_device(dev)
    else:
        dev = torch.device(device)
    owns = False
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
        owns = True
    return DistContext(rank, world, local, dev, owns)
