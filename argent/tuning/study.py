"""A worker's loop: take a budget slot, run one trial with ``study.optimize``, until the budget is spent.

Each trial runs through Optuna's own ``study.optimize(n_trials=1)``, which beats the trial's
heart in the storage, fails stale trials of dead workers first (the storage's stale-trial
callback re-queues them) and tells the result. Outcomes:

- COMPLETE: a finite objective value.
- PRUNED: the pruner stopped the trial at a reported step.
- FAIL, the study goes on: training diverged (``TrainingDiverged``) or the value is NaN/inf.
- FAIL, the worker stops: any other error (a bug or bad data should be looked at).
- A killed worker (SIGKILL, node lost) leaves its trial RUNNING; its heart stops, and after the
  grace period another worker fails it and re-runs its parameters as a new trial.
- A stopped worker (SIGTERM, SIGUSR1, a Ctrl-C's SIGINT): the trial's training checkpoints the step it
  reached and stops; the trial is failed and re-queued at once, as a dead worker's would be after the
  grace period (``TrialStopped``), and the worker ends with ``WorkerStopped`` (exit 75; 130 for SIGINT).
  A signal outside training stops the worker before its next trial.

``user_attrs["failure"]`` / ``["pruned"]`` say why; docs/tuning.md describes the guarantees.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from argent.engine.preemption import Preempted, StopRequest, exit_code_for
from argent.engine.step import TrainingDiverged
from argent.io import ArgentError
from argent.tuning.budget import RetryStaleTrial, TrialBudget, retried_trial_number, retry_history, slot_seed
from argent.tuning.space import sample_params
from argent.tuning.storage import StudySpec, make_pruner, make_sampler, open_study, quiet_optuna, storage_for
from argent.tuning.tracking import RunTracker, StudyTracking

__all__ = ["TrialContext", "Objective", "run_study", "WorkerStopped"]

log = logging.getLogger("argent.tune")


@dataclass
class TrialContext:
    """What an objective gets: the Optuna trial, its sampled fields, its run folder."""

    trial: optuna.Trial
    params: dict[str, Any]
    run_dir: Path
    run: RunTracker | None = None  # MLflow trial run

    @property
    def number(self) -> int:
        return self.trial.number

    def report(self, value: float, step: int, scores: dict[str, float] | None = None, prune: bool = True) -> None:
        """Report an intermediate objective value (and mirror it to MLflow at ``step``); raises
        ``optuna.TrialPruned`` when ``prune`` and the pruner says so."""
        if self.run is not None:
            self.run.log_metrics([{"step": step, "tune/value": value, **{f"tune/{k}": v for k, v in (scores or {}).items()}}])
        if not math.isfinite(value):
            return  # a NaN would poison the pruner's medians; the final value decides this trial
        self.trial.report(value, step)
        if prune and self.trial.should_prune():
            raise optuna.TrialPruned(f"trial {self.number} pruned at step {step} (value {value:.4g})")


Objective = Callable[[TrialContext], float]


class TrialStopped(BaseException):
    """Trial ``number``'s training stopped on a signal (``why``: the trainer's ``Preempted``). A
    BaseException, so it passes through ``study.optimize`` (which would fail the trial, log a
    traceback and never retry it) with the trial still RUNNING, for ``run_study`` to re-queue."""

    def __init__(self, number: int, why: Preempted) -> None:
        super().__init__(str(why))
        self.number, self.why = number, why


class WorkerStopped(ArgentError):
    """The worker stopped on a signal (exit 75; 130 for SIGINT); the study goes on when a worker runs again."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _TrialRunner:
    """The ``func`` given to ``study.optimize``: sample, run the objective, record why it ended."""

    def __init__(self, spec: StudySpec, objective: Objective, tracking: StudyTracking) -> None:
        self.spec = spec
        self.objective = objective
        self.tracking = tracking
        self.run: RunTracker | None = None
        self.last_state = ""
        self.study: optuna.Study | None = None  # the study object optimize() runs this trial in

    def __call__(self, trial: optuna.Trial) -> float:
        params = sample_params(trial, self.spec.tune.space)
        run_dir = self.spec.out_dir / "trials" / str(trial.number)
        (frozen,) = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                     if t.number == trial.number]
        retry_of = retried_trial_number(frozen)
        self.run = self.tracking.trial_run(trial.number, run_dir, params, retry_of)
        log.info("trial %d%s: %s", trial.number, f" (retry of {retry_of})" if retry_of is not None else "", params)
        start = time.perf_counter()
        try:
            value = float(self.objective(TrialContext(trial=trial, params=params, run_dir=run_dir, run=self.run)))
            if not math.isfinite(value):
                trial.set_user_attr("failure", f"objective value is {value}")  # Optuna fails the trial
            return value
        except optuna.TrialPruned as err:
            trial.set_user_attr("pruned", str(err))
            raise
        except Preempted as err:
            trial.set_user_attr("failure", f"stopped: {err}"[:2000])
            raise TrialStopped(trial.number, err) from err
        except TrainingDiverged as err:
            trial.set_user_attr("failure", f"diverged: {err}"[:2000])
            raise
        except Exception as err:
            trial.set_user_attr("failure", f"{type(err).__name__}: {err}"[:2000])
            self.tracking.close_trial(self.run, "FAIL", None, trial.user_attrs["failure"])
            self.run = None
            raise
        finally:
            trial.set_user_attr("duration_s", round(time.perf_counter() - start, 3))

    def finished(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """``study.optimize`` callback after the trial is told: close its MLflow run, log it."""
        self.tracking.close_trial(self.run, trial.state.name, trial.value, trial.user_attrs.get("failure"))
        self.run = None
        self.last_state = trial.state.name
        why = trial.user_attrs.get("failure") or trial.user_attrs.get("pruned")
        log.info("trial %d: %s%s", trial.number, trial.state.name,
                 f" value={trial.value:.6g}" if trial.state == TrialState.COMPLETE else f" ({why})")


def _requeue(study: optuna.Study, stopped: TrialStopped, retry: RetryStaleTrial, max_retry: int) -> str:
    """Fail the stopped trial (still RUNNING) and re-queue its parameters at once, as a dead worker's
    trial is once stale (``RetryStaleTrial``: a WAITING copy and a budget slot for it). Says what became of it."""
    number = stopped.number
    (trial,) = [t for t in study.get_trials(deepcopy=False) if t.number == number]
    if trial.state == TrialState.RUNNING:  # else another worker failed it as stale, and re-queued it
        study.tell(number, state=TrialState.FAIL)
        (failed,) = [t for t in study.get_trials() if t.number == number]
        retry(study, failed)
    again = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
             if retry_history(t)[-1:] == [number]]
    if not again:
        return f"trial {number} is not queued again: its retries are spent (tune.max_retry: {max_retry})"
    return (f"trial {number} is queued again as trial {again[0]} (same parameters), for the next worker: "
            f"`argent tune` again (or the workflow) goes on with the study")


def run_study(spec: StudySpec, objective: Objective, *, max_trials: int | None = None,
              stop: StopRequest | None = None) -> dict[str, Any]:
    """Work on the study until its budget is spent and no trial runs elsewhere.

    ``objective(ctx) -> float`` trains/evaluates one trial (``ctx.report`` feeds the pruner).
    ``max_trials`` stops this worker after that many trials (tests, time-sliced jobs). ``stop``
    (listening to the stop signals) ends the worker before its next trial with ``WorkerStopped``; a
    trial whose training stopped on a signal is re-queued first.
    Returns counts of the trials this worker ran, by final state.
    """
    tune = spec.tune
    quiet_optuna()
    budget = TrialBudget(storage_for(spec), tune.study)
    retry = RetryStaleTrial(tune.max_retry, budget)
    storage = storage_for(spec, retry)
    study = open_study(spec, storage)
    budget.issue(tune.n_trials, study)
    tracking = StudyTracking(spec)
    runner = _TrialRunner(spec, objective, tracking)
    poll_s = max(1.0, min(5.0, tune.heartbeat_interval / 2))
    ran: dict[str, int] = {}
    while max_trials is None or sum(ran.values()) < max_trials:
        if stop is not None and stop.received:
            raise WorkerStopped(f"stopped on {stop.received} between trials, after {sum(ran.values())} trial(s) of "
                                f"this worker; `argent tune` again (or the workflow) goes on with the study",
                                exit_code_for(stop.received))
        slot = budget.claim(tune.n_trials)
        if slot is None:
            if tune.heartbeat_interval and study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                # A running trial may finish, or its worker may be dead: fail it once stale, which
                # re-queues it with a slot of its own.
                optuna.storages.fail_stale_trials(study)
                time.sleep(poll_s)
                continue
            break
        # The slot seeds the sampler: slot k draws the same values whichever worker runs it.
        trial_study = optuna.load_study(study_name=tune.study, storage=storage,
                                        sampler=make_sampler(tune.sampler, slot_seed(slot)), pruner=make_pruner(tune.pruner))
        runner.study = trial_study
        try:
            trial_study.optimize(runner, n_trials=1, catch=(TrainingDiverged,), callbacks=[runner.finished])
        except TrialStopped as stopped:
            outcome = _requeue(trial_study, stopped, retry, tune.max_retry)
            runner.tracking.close_trial(runner.run, "FAIL", None, f"stopped: {stopped}")
            why = stopped.why
            raise WorkerStopped(f"stopped on {why.received} in trial {stopped.number}, whose training stopped at "
                                f"step {why.step}; {outcome}", why.exit_code) from None
        state = runner.last_state
        ran[state] = ran.get(state, 0) + 1
    return {"study": tune.study, "ran": ran}
