"""Run by test_resume_ddp under torch.distributed.run (gloo): a tiny run into OUT with ``--resume MODE``;
each rank writes the step it started at (or its error) to OUT/../rank<r>.json.

    python -m torch.distributed.run --standalone --nproc_per_node 2 resume_ddp.py OUT MODE
"""

import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

import argent.runs.staging
from argent.engine.trainer import train
from argent.io import ArgentError
from tests.fixtures import stream, tiny_exp

dist.init_process_group("gloo")
torch.set_num_threads(1)
out, mode = Path(sys.argv[1]), sys.argv[2]
rank = dist.get_rank()
seen: list[int] = []

if rank == 0:
    # Rank 0 is slow to read the checkpoint (a busy shared file system): a rank that did not wait
    # for its decision would read the torn file itself meanwhile, or see it vanish half-way.
    _read = argent.runs.staging.read_checkpoint

    def slow_read(*args, **kwargs):
        time.sleep(3)
        return _read(*args, **kwargs)

    argent.runs.staging.read_checkpoint = slow_read  # what resume_state reads with


def hook(step, batch):
    seen.append(step)
    return batch


report = out.parent / f"rank{rank}.json"
try:
    train(tiny_exp(), out, resume=mode, batches=stream, batch_hook=hook)
    report.write_text(json.dumps({"first_step": seen[0] if seen else None, "steps": len(seen)}))
except ArgentError as err:
    report.write_text(json.dumps({"error": str(err)}))
    sys.exit(2)
finally:
    if dist.is_initialized():
        dist.destroy_process_group()
