"""Stop at a step boundary when the scheduler warns: preemption or a time limit loses nothing.

A scheduler warns a job before it kills it: Slurm sends SIGTERM at a time limit or a preemption (then
SIGKILL after the cluster's ``KillWait``, 30 s by default), and a warning ahead of the limit when asked
(``--signal=TERM@<seconds>``, profiles/slurm). The trainer listens for SIGTERM and SIGUSR1: the handler
only records the signal; the loop finishes the step it is in (under DDP one more, for every rank to
agree on it without waiting on the device), rank 0 writes the checkpoint (atomic: a second signal
during the save only records itself again), and the trainer raises ``Preempted``. ``argent train``
exits with ``PREEMPTED_EXIT``; Snakemake's retry (the train rule runs ``--resume auto``) continues at
exactly that step, bit for bit as if never stopped.

A Ctrl-C (SIGINT) is a stop signal too: the step reached is checkpointed, and the run ends with
``Interrupted``, exit 130 (128 + SIGINT, the shell's status for a Ctrl-C) rather than 75. 75 says
"try again later" (EX_TEMPFAIL: a wrapper that retries on it, Slurm's ``RequeueExit``); the user's
stop must not be undone by a retry. ``--resume`` continues at the step whenever the user wants.

DataLoader worker processes ignore the stop signals (``quiet_worker``): Slurm signals every process
of the job step, a terminal's Ctrl-C every process of its foreground group, and a worker killed by a
signal fails the main process wherever it is (torch raises from its SIGCHLD handler), before the
checkpoint. The trainer drops its loader when it leaves, which shuts the workers down in order
(torch's ``terminate()`` is a SIGTERM they now ignore).
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

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)
PREEMPTED_EXIT = 75  # EX_TEMPFAIL (sysexits.h): try again later; distinct from an expected failure's 2
INTERRUPTED_EXIT = 130  # 128 + SIGINT: the user stopped it (module doc: why not 75)


class Preempted(ArgentError):
    """Training stopped on a signal after checkpointing the step it had reached; resume continues there."""

    exit_code = PREEMPTED_EXIT
    received: str | None = None  # the signal's name
    step: int | None = None  # the step checkpointed


class Interrupted(Preempted):
    """Stopped by the user (SIGINT, Ctrl-C), the step reached checkpointed: not to be retried by itself."""

    exit_code = INTERRUPTED_EXIT


def exit_code_for(received: str | None) -> int:
    """The status a process stopped by ``received`` (a signal's name) exits with."""
    return INTERRUPTED_EXIT if received == signal.SIGINT.name else PREEMPTED_EXIT


def quiet_worker(_worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: the stop signals are the main process's to act on (module doc)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class StopRequest:
    """Records SIGUSR1/SIGTERM/SIGINT between ``listen()`` and ``restore()``; ``agreed`` says whether to
    stop now.

    Handlers are installed only in the main thread (Python's rule; a trainer run from another thread,
    e.g. an in-process tuning worker, keeps the process's own handling) and the previous ones are put
    back on exit. Listeners nest (a tuning worker listens around the trainer of each trial): one that
    was signalled hands the signal on to the listener it displaced when it restores it, so a signal the
    trainer took at its last step still stops the worker.
    """

    def __init__(self, doing: str = "stopping at the next step boundary with a checkpoint") -> None:
        self.received: str | None = None
        self.doing = doing  # what the log line says happens next
        self._previous: dict[signal.Signals, Any] = {}
        self._pending: tuple[Any, torch.Tensor] | None = None  # (the reduction in flight, its flag)

    def _record(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is None:
            log.warning("%s received: %s", name, self.doing)
            self.received = name

    def listen(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._record)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
            outer = getattr(handler, "__self__", None)
            if isinstance(outer, StopRequest) and outer.received is None and self.received == sig.name:
                outer.received = self.received  # handed on, once: its log line was this one's
        self._previous.clear()

    def stopped(self, message: str, step: int) -> Preempted:
        """The exception that ends the run at ``step`` on the signal received: ``Interrupted`` for SIGINT."""
        err = Interrupted(message) if self.received == signal.SIGINT.name else Preempted(message)
        err.received, err.step = self.received, step
        return err

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
