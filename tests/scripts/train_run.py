"""Train a tiny run on synthetic batches; optionally SIGKILL itself at a given step.

usage: train_run.py OUT VARIANT STEPS [--kill-at K] [--resume]
"""

import argparse
import os
import signal
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batches import stream  # noqa: E402

from argent.config import experiment_from_dict  # noqa: E402
from argent.engine.trainer import train  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("variant")
    p.add_argument("steps", type=int)
    p.add_argument("--kill-at", type=int, default=-1)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    cfg = experiment_from_dict(
        {"train": {"steps": args.steps, "batch_size": 8, "log_every": 2, "diagnostics_every": 4,
                   "checkpoint_every": 5, "deterministic": True},
         "optim": {"warmup_steps": 3}, "tracking": {"enabled": False}},
        args.variant, "tiny", 0, base_dir=Path(__file__).resolve().parents[2])

    def hook(step, batch):
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return batch

    train(cfg, args.out, resume="strict" if args.resume else "no", batches=stream, batch_hook=hook)


if __name__ == "__main__":
    main()
