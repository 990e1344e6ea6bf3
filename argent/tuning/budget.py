"""The trial budget, exact across any number of workers, through Optuna's public API only.

``MaxTrialsCallback`` stops a worker *after* a trial once the count is reached, so two workers
that both start a trial at count N−1 end with N+1 trials. An exact budget needs an atomic
"take one slot" in the shared storage. Optuna has one: ``study.ask()`` turns a WAITING trial
into RUNNING with a compare-and-set in the storage, so two workers never pop the same one.

So the budget is a companion study ``<study>.budget`` whose WAITING trials are the free slots
(``user_attrs["slot"]``: ``"0"`` … ``"N-1"``, plus ``"retry-<k>"`` for the re-run of a dead
worker's trial k). A worker takes a slot from it before it starts a trial of the real study.
Any worker may issue slots (when a study starts or is extended); two workers issuing the same
slot at once is harmless: of several tokens with one slot name only the lowest-numbered counts,
so each slot yields exactly one trial. When no slot is left, an ``ask`` on the budget study
creates an empty token, which is discarded: the real study never gets a trial beyond the budget.
docs/tuning.md has the full argument.
"""

from __future__ import annotations

import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

__all__ = ["TrialBudget", "RetryStaleTrial", "slot_seed", "retry_history", "retried_trial_number", "retried_numbers", "budget_used", "finished_in_budget"]

_RETRY = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None) or optuna.storages.RetryFailedTrialCallback
_LIVE = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE)


def _quiet(fn: Any, *args: Any) -> Any:
    """Optuna marks its retry callback experimental; the notice on every call would flood the log."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return fn(*args)


def retry_history(trial: FrozenTrial) -> list[int]:
    """Numbers of the stale trials this trial re-runs, oldest first (empty for a fresh trial)."""
    return _quiet(_RETRY.retry_history, trial)


def retried_trial_number(trial: FrozenTrial) -> int | None:
    """The original trial this one re-runs, or None."""
    return _quiet(_RETRY.retried_trial_number, trial)


class TrialBudget:
    """Slots of one study's budget, kept as WAITING trials of ``<study>.budget`` in the same storage."""

    def __init__(self, storage: Any, study_name: str) -> None:
        # The slot study needs no heartbeat: a token is told the moment it is taken.
        self.study = optuna.create_study(storage=storage, study_name=f"{study_name}.budget",
                                         sampler=optuna.samplers.RandomSampler(seed=0), load_if_exists=True)

    def _issued(self) -> set[str]:
        return {t.user_attrs["slot"] for t in self.study.get_trials(deepcopy=False, states=_LIVE)
                if "slot" in t.user_attrs}

    def issue(self, n_trials: int, study: optuna.Study) -> None:
        """Make sure slots ``0`` … ``n_trials-1`` exist (a larger ``n_trials`` extends the study).

        A study whose trials predate its budget study (made by an older argent) has spent
        ``budget_used`` slots already; those are not issued again.
        """
        issued = self._issued()
        first = 0
        if not self.study.get_trials(deepcopy=False):
            first = budget_used(study.get_trials(deepcopy=False))
        for k in range(first, n_trials):
            if str(k) not in issued:
                self.study.enqueue_trial({}, user_attrs={"slot": str(k)})

    def issue_retry(self, failed_number: int) -> None:
        """One extra slot for the re-run of trial ``failed_number`` (its worker died)."""
        self.study.enqueue_trial({}, user_attrs={"slot": f"retry-{failed_number}"})

    def claim(self, n_trials: int) -> str | None:
        """Take a free slot (atomically across workers); ``None`` when the budget is spent."""
        while self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            token = self.study.ask()  # pops a WAITING token, or creates an empty one if another worker won the race
            slot = token.user_attrs.get("slot")
            if slot is not None and self._valid(slot, token.number, n_trials):
                self.study.tell(token, 1.0)
                return slot
            self.study.tell(token, state=TrialState.FAIL)  # a duplicate, a slot beyond the budget, or empty
        return None

    def _valid(self, slot: str, number: int, n_trials: int) -> bool:
        if not slot.startswith("retry-") and int(slot) >= n_trials:
            return False  # the budget was lowered; the slot is issued again if it is raised
        return not any(t.user_attrs.get("slot") == slot and t.number < number
                       for t in self.study.get_trials(deepcopy=False, states=_LIVE))


def slot_seed(slot: str) -> int:
    """Sampler seed offset of a slot: slot k samples with seed + k (a retry re-uses fixed params)."""
    return int(slot) if slot.isdigit() else 1_000_000 + int(slot.split("-")[1])


class RetryStaleTrial:
    """Heartbeat-stale trial callback: Optuna's retry (a WAITING copy with ``failed_trial`` and
    ``retry_history``) plus a budget slot for it, so the re-run does not take a fresh trial's slot."""

    def __init__(self, max_retry: int, budget: TrialBudget) -> None:
        self.retry = _quiet(_RETRY, max_retry)
        self.budget = budget

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        _quiet(self.retry, study, trial)
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if any(retry_history(t)[-1:] == [trial.number] for t in waiting):
            self.budget.issue_retry(trial.number)


def retried_numbers(trials: list[FrozenTrial]) -> set[int]:
    """Numbers of stale trials that were re-queued (their retry lists them in ``retry_history``)."""
    out: set[int] = set()
    for t in trials:
        out.update(retry_history(t))
    return out


def budget_used(trials: list[FrozenTrial]) -> int:
    """Trials that hold a slot of the budget: finished, running or queued; a stale FAIL whose
    parameters were re-queued is replaced by its retry and does not count."""
    retried = retried_numbers(trials)
    return sum(1 for t in trials if t.state != TrialState.FAIL or t.number not in retried)


def finished_in_budget(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """The finished trials that count towards the budget (COMPLETE, PRUNED, FAIL not retried)."""
    retried = retried_numbers(trials)
    return [t for t in trials if t.state.is_finished() and not (t.state == TrialState.FAIL and t.number in retried)]
