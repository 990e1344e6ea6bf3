"""Train a tiny run (synthetic batches, checkpoint every 2) into argv[1] for ``--steps`` steps, as
``argent train`` would (an ``ArgentError`` is one line on stderr and exit 2). ``--hold-at K``: at
step K touch ``--ready`` and wait for ``--go`` to appear (another process acts meanwhile);
``--kill-at K``: SIGKILL itself at step K. Used by test_run_folder_writers.py."""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.fixtures
import torch  # noqa: E402

from argent.engine.trainer import train  # noqa: E402
from argent.io import ArgentError  # noqa: E402
from tests.fixtures import stream, tiny_exp  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--steps", type=int, default=4)
p.add_argument("--hold-at", type=int, default=-1)
p.add_argument("--ready", type=Path)
p.add_argument("--go", type=Path)
p.add_argument("--kill-at", type=int, default=-1)
p.add_argument("--resume", default="no")
args = p.parse_args()
torch.set_num_threads(1)


def hook(step, batch):
    if step == args.kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    if step == args.hold_at:
        args.ready.write_text(str(os.getpid()))
        deadline = time.monotonic() + 120
        while not args.go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return batch


try:
    summary = train(tiny_exp(steps=args.steps, checkpoint_every=2), args.out, resume=args.resume, batches=stream,
                    batch_hook=hook)
except ArgentError as err:
    print(f"argent: error: {err}", file=sys.stderr)
    sys.exit(2)
print(f"finished {summary['steps']} steps")
