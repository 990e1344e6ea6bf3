"""MLflow mirror of a study: one parent run for the study, one nested run per trial.

Best effort through ``argent.tracking.Tracker`` (every call guarded; a tracking failure
never stops the study). The trial's training logs into the trial's nested run: both carry the
trial's run folder as ``argent_run_id``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from argent.io import exclusive_lock
from argent.tracking import Tracker
from argent.tuning.storage import StudySpec

__all__ = ["RunTracker", "StudyTracking"]


class RunTracker(Tracker):
    """``Tracker`` plus tags; every call is best effort through ``Tracker._safe``."""

    def set_tags(self, tags: dict[str, Any]) -> None:
        for key, value in tags.items():
            if self.enabled:
                self._safe(self._client.set_tag, self.run_id, key, str(value))


@contextlib.contextmanager
def _folder_lock(out_dir: Path) -> Iterator[None]:
    """MLflow has no create-if-absent for runs: workers that start together would each make a
    parent run. A lock in the (shared) study folder serialises the find-or-create."""
    with exclusive_lock(out_dir / ".mlflow-parent.lock"):
        yield


class StudyTracking:
    """Parent MLflow run of the study and one nested run per trial. Never raises."""

    def __init__(self, spec: StudySpec) -> None:
        self.spec = spec
        self.enabled = spec.tracking.enabled
        self.parent: RunTracker | None = None
        if not self.enabled:
            return
        storage_id = hashlib.sha256(spec.storage_url.encode()).hexdigest()[:12]
        tags = {"argent_run_id": f"tune:{spec.tune.study}:{storage_id}", "optuna_study": spec.tune.study,
                "base_variant": spec.tune.base_variant, "size": spec.tune.size, "kind": "study"}
        with _folder_lock(spec.out_dir):
            self.parent = RunTracker(spec.tracking.uri, spec.experiment, f"tune-{spec.tune.study}", tags)
        if self.parent.enabled:
            self.parent.log_params({"space": json.dumps(dataclasses.asdict(spec.tune)["space"]),
                                    "objective": json.dumps([dataclasses.asdict(t) for t in spec.tune.objective]),
                                    "direction": spec.tune.direction, "n_trials": spec.tune.n_trials,
                                    "sampler": spec.tune.sampler.name, "pruner": spec.tune.pruner.name})

    @property
    def active(self) -> bool:
        return self.enabled and self.parent is not None and self.parent.enabled

    def trial_run(self, number: int, run_dir: Path, params: dict[str, Any], retry_of: int | None) -> RunTracker | None:
        """The nested run of a trial; the trial's training (same run folder) logs into it too."""
        if not self.active:
            return None
        tags = {"argent_run_id": str(run_dir.resolve()), "mlflow.parentRunId": self.parent.run_id,
                "optuna_study": self.spec.tune.study, "optuna_trial": str(number), "kind": "trial"}
        if retry_of is not None:
            tags["optuna_retry_of"] = str(retry_of)
        run = RunTracker(self.spec.tracking.uri, self.spec.experiment, f"trial-{number}", tags)
        run.set_tags({"mlflow.parentRunId": self.parent.run_id})  # also when an old run of this folder was found
        run.log_params({f"tune.{k}": v for k, v in params.items()})
        return run

    @staticmethod
    def close_trial(run: RunTracker | None, state: str, value: float | None, failure: str | None) -> None:
        if run is None:
            return
        run.set_tags({"optuna_state": state, **({"optuna_failure": failure} if failure else {})})
        if value is not None and math.isfinite(value):
            run.log_metrics([{"step": 0, "tune/final_value": value}])
        run.finish({"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state, "FAILED"))

    def close_study(self, summary: dict[str, Any], files: list[Path], done: bool) -> None:
        """Best value, trial counts and the exported files on the parent run; FINISHED when done."""
        if not self.active:
            return
        if summary["best"]:
            self.parent.log_metrics([{"step": summary["best"]["number"], "tune/best_value": summary["best"]["value"]}])
            self.parent.set_tags({"best_trial": summary["best"]["number"]})
        self.parent.log_metrics([{"step": 0, **{f"trials/{k.lower()}": v for k, v in summary["counts"].items()}}])
        for path in files:
            self.parent.log_artifact(path)
        if done:
            self.parent.finish("FINISHED")
