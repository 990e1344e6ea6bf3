"""The stop signals (argent/engine/preemption.py) with SIGINT among them (issue 45 item 1): a Ctrl-C
is recorded like a scheduler's SIGTERM, ends the run with ``Interrupted`` (exit 130, not the 75 a
retry acts on), loader workers ignore it, and a nested listener (the trainer inside a tuning worker)
hands the signal on to the one it displaced."""

from __future__ import annotations

import os
import signal

import pytest
import torch

from argent.engine.preemption import (
    INTERRUPTED_EXIT,
    PREEMPTED_EXIT,
    Interrupted,
    Preempted,
    StopRequest,
    quiet_worker,
)


@pytest.mark.parametrize("sig, kind, code", [(signal.SIGINT, Interrupted, INTERRUPTED_EXIT),
                                             (signal.SIGTERM, Preempted, PREEMPTED_EXIT),
                                             (signal.SIGUSR1, Preempted, PREEMPTED_EXIT)])
def test_each_stop_signal_is_recorded_and_names_its_exit(sig, kind, code):
    before = signal.getsignal(sig)
    stop = StopRequest()
    stop.listen()
    try:
        os.kill(os.getpid(), sig)  # SIGINT: no KeyboardInterrupt here
        assert stop.agreed(torch.device("cpu"), world_size=1) and stop.received == sig.name
    finally:
        stop.restore()
    assert signal.getsignal(sig) is before
    err = stop.stopped("stopped", step=7)
    assert type(err) is kind and err.exit_code == code and (err.received, err.step) == (sig.name, 7)


def test_a_nested_listener_hands_its_signal_on_to_the_one_it_displaced():
    outer, inner = StopRequest(), StopRequest()
    outer.listen()
    try:
        inner.listen()
        os.kill(os.getpid(), signal.SIGINT)
        assert inner.received == "SIGINT" and outer.received is None
        inner.restore()
        assert outer.received == "SIGINT"  # e.g. the trainer's last step took it: the tuning worker still stops
    finally:
        outer.restore()


def test_loader_workers_ignore_a_ctrl_c():
    """A terminal's Ctrl-C reaches every process of its group; the main process acts on it."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    try:
        quiet_worker(0)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
