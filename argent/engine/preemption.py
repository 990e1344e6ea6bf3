"""Stop at a step boundary when the scheduler warns: preemption or a time limit loses nothing.

A scheduler warns a job before it kills it: Slurm sends SIGTERM at a time limit or a preemption (then
SIGKILL after the cluster's ``KillWait``, 30 s by default), and a warning ahead of the limit when asked
(``--signal=TERM@<seconds>``, profiles/slurm). The trainer listens for SIGTERM and SIGUSR1: the handler
only records the signal; the loop finishes the step it is in (under DDP one more, for every rank to
agree on it without waiting on the device), rank 0 writes the checkpoint (atomic: a second signal
during the save only records itself again), and the trainer raises ``Preempted``. ``argent train``
exits with ``PREEMPTED_EXIT``; Snakemake's retry (the train rule runs ``--resume auto``) continues at
exactly that step, bit for bit as if never stopped.

DataLoader worker processes ignore both signals (``quiet_worker``): Slurm signals every process of
the job step, and a worker killed by a signal fails the main process wherever it is (torch raises from
its SIGCHLD handler), before the checkpoint. The trainer drops its loader when it leaves, which shuts
the workers down in order (torch's ``terminate()`` is a SIGTERM they now ignore).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any

import torch
import torch.distributed as dist

from argent.io import ArgentError

log = logging.getLogger("argent.train")

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGUSR1, signal.SIGTERM)
PREEMPTED_EXIT = 75  # EX_TEMPFAIL (sysexits.h): try again later; distinct from an expected failure's 2


class Preempted(ArgentError):
    """Training stopped on a signal after checkpointing the step it had reached; resume continues there."""

    exit_code = PREEMPTED_EXIT


def quiet_worker(_worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: the stop signals are the main process's to act on (module doc)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class StopRequest:
    """Records SIGUSR1/SIGTERM between ``listen()`` and ``restore()``; ``agreed`` says whether to stop now.

    Handlers are installed only in the main thread (Python's rule; a trainer run from another thread,
    e.g. an in-process tuning worker, keeps the process's own handling) and the previous ones are put
    back on exit.
    """

    def __init__(self) -> None:
        self.received: str | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self._pending: tuple[Any, torch.Tensor] | None = None  # (the reduction in flight, its flag)

    def _record(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is None:
            log.warning("%s received: stopping at the next step boundary with a checkpoint", name)
            self.received = name

    def listen(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._record)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def agreed(self, device: torch.device, world_size: int) -> bool:
        """True on every rank at the same step boundary once any rank has been signalled.

        Under DDP each boundary starts one small all-reduce of this rank's flag and reads the one
        started at the previous boundary, so the host never waits for the device's current step (a
        blocking reduction would end the host's run-ahead every step); the ranks therefore stop one
        step after the first signal, all at the same step. One process: the boundary after the signal.
        """
        if world_size == 1 or not dist.is_initialized():
            return self.received is not None
        flag = torch.tensor([0 if self.received is None else 1], dtype=torch.int32, device=device)
        started = (dist.all_reduce(flag, op=dist.ReduceOp.MAX, async_op=True), flag)
        previous, self._pending = self._pending, started
        if previous is None:
            return False
        previous[0].wait()
        if not previous[1].item():
            return False
        started[0].wait()  # every rank leaves with no reduction in flight
        self._pending = None
        if self.received is None:
            self.received = "another rank's signal"
        return True
