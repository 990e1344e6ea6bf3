"""Run by test_skip_counts under torch.distributed.run (gloo): one batch per rank, then the summed counts.

    python -m torch.distributed.run --standalone --nproc_per_node 2 skip_counts_ddp.py '<shard pattern>' out.json
"""

import json
import sys
from pathlib import Path

import torch.distributed as dist

from argent.config import DataConfig
from argent.data.loaders import train_loader
from argent.data.policy import skip_counts

dist.init_process_group("gloo")
pattern, out = sys.argv[1], Path(sys.argv[2])
data_cfg = DataConfig(train_shards=pattern, format="plain", augment=False)
batches = iter(train_loader(data_cfg, batch_size=5, image_size=16, context_length=16, use_boxes=False, seed=0,
                            rank=dist.get_rank(), world_size=dist.get_world_size(), shuffle_buffer=1))
next(batches)
counts = skip_counts(batches)  # a collective: every rank calls it
if dist.get_rank() == 0:
    out.write_text(json.dumps(counts))
dist.destroy_process_group()
