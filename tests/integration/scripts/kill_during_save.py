"""Train 4 tiny steps into argv[1] (checkpoint every 2); SIGKILL itself half-way through writing the
second checkpoint. Used by test_kill.py."""

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.fixtures
import argent.engine.checkpoint as checkpoint  # noqa: E402
from argent.engine.trainer import train  # noqa: E402
from tests.fixtures import stream, tiny_exp  # noqa: E402

real_save = checkpoint.torch.save
calls = []


def save_then_die(obj, f):
    calls.append(1)
    if len(calls) == 2:
        f.write(b"PK\x03\x04 the first bytes of a checkpoint")
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    real_save(obj, f)


checkpoint.torch.save = save_then_die
train(tiny_exp(steps=4), sys.argv[1], batches=stream)
