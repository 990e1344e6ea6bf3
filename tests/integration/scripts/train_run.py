"""Train a tiny run on synthetic batches; optionally SIGKILL itself, or send itself a stop signal, at a
given step (a stop signal makes the trainer checkpoint and exit with its preempted status).

usage: train_run.py OUT VARIANT STEPS [--kill-at K] [--signal-at K [--signal USR1|TERM] [--only-rank R]
                    [--again-in-save]] [--checkpoint-every N] [--resume]
"""

import argparse
import os
import signal
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.fixtures
import argent.engine.trainer as trainer  # noqa: E402
from argent.config import experiment_from_dict  # noqa: E402
from argent.engine.preemption import PREEMPTED_EXIT, Preempted  # noqa: E402
from tests.fixtures import ROOT, stream  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("variant")
    p.add_argument("steps", type=int)
    p.add_argument("--kill-at", type=int, default=-1)
    p.add_argument("--signal-at", type=int, default=-1)
    p.add_argument("--signal", default="USR1", choices=["USR1", "TERM"])
    p.add_argument("--only-rank", type=int, default=-1, help="under torchrun: signal this rank alone")
    p.add_argument("--again-in-save", action="store_true", help="a second signal while the checkpoint is written")
    p.add_argument("--checkpoint-every", type=int, default=5)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    trainer.configure_logging()
    cfg = experiment_from_dict(
        {"train": {"steps": args.steps, "batch_size": 8, "log_every": 2, "diagnostics_every": 4,
                   "checkpoint_every": args.checkpoint_every, "deterministic": True},
         "optim": {"warmup_steps": 3}, "tracking": {"enabled": False}},
        args.variant, "tiny", 0, base_dir=ROOT)
    stop = getattr(signal, f"SIG{args.signal}")
    rank = int(os.environ.get("RANK", "0"))

    def hook(step, batch):
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == args.signal_at and args.only_rank in (-1, rank):
            os.kill(os.getpid(), stop)
        return batch

    if args.again_in_save:
        save = trainer.atomic_torch_save

        def save_with_a_signal_inside(obj, path):  # the signal lands between torch.save's writes
            real_save = torch.save

            def interrupted(*a, **k):
                os.kill(os.getpid(), signal.SIGTERM)
                return real_save(*a, **k)

            torch.save = interrupted
            try:
                save(obj, path)
            finally:
                torch.save = real_save

        trainer.atomic_torch_save = save_with_a_signal_inside
    try:
        trainer.train(cfg, args.out, resume="strict" if args.resume else "no", batches=stream, batch_hook=hook)
    except Preempted as err:
        print(f"preempted: {err}", file=sys.stderr)
        sys.exit(PREEMPTED_EXIT)


if __name__ == "__main__":
    main()
