"""The MLflow client plumbing: one ``Tracker`` per run folder, found again or created, never raising.

Every MLflow call goes through ``Tracker._safe``: the first failure is reported once, tracking is
switched off for the rest of the job, and training (or evaluation) goes on. What a run receives
(params, metrics, tags, artifacts) is decided in ``argent.tracking.mirror`` and
``argent.tracking.tags``. mlflow itself is imported inside the methods: it is a heavy import that a
job with tracking off never pays.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from argent.io import atomic_write_json, exclusive_lock, flatten
from argent.tracking.tags import EVAL_PREFIX, EXPERIMENT_KIND, KEEP_TAGS, metric_key, result_tags

__all__ = ["Tracker"]

log = logging.getLogger("argent.tracking")

# An unreachable server must not stall a job with MLflow's default retry back-off.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Exclusive lock of a SQLite store (``<db>.lock`` beside it); nothing for other stores."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    with exclusive_lock(db.with_name(db.name + ".lock")):
        yield


RESEND_LATER = "re-send it later with `argent track --run <run dir>`"


class Tracker:
    """One MLflow run per run folder (variant, size, seed). Never raises.

    The run is found again through ``record`` (the run folder's ``mlflow_run.json``: same store,
    run still active), else through the ``argent_run_id`` tag, else created. A run of the same
    folder made under another config hash is superseded: deleted (soft) so that the UI shows what
    the folder holds now. ``created`` says whether this tracker made a new MLflow run.
    """

    def __init__(self, uri: str, experiment: str, run_name: str, tags: dict[str, str], enabled: bool = True,
                 record: Path | None = None, advice: str = RESEND_LATER) -> None:
        self.enabled = enabled
        self.advice = advice  # what the warning tells the user to do when the store fails
        self.run_id: str | None = None
        self.created = False
        if not enabled:
            return
        self._safe(self._start, uri, experiment, run_name, tags, record)

    def _start(self, uri: str, experiment: str, run_name: str, tags: dict[str, str], record: Path | None) -> None:
        # Jobs that open a fresh SQLite store at the same moment race in MLflow's schema set-up
        # ("table ... already exists", half-made tables): one job at a time opens a SQLite store
        # (a lock file beside it), and a store that is busy anyway gets a second try.
        for attempt in range(3):
            try:
                with _store_lock(uri):
                    return self._open(uri, experiment, run_name, tags, record)
            except Exception as err:  # noqa: BLE001 - re-raised unless it is that race
                if attempt == 2 or not any(s in str(err) for s in ("already exists", "database is locked")):
                    raise
                time.sleep(1.0 + attempt)

    def _open(self, uri: str, experiment: str, run_name: str, tags: dict[str, str], record: Path | None) -> None:
        import mlflow

        self._client = mlflow.MlflowClient(tracking_uri=uri)
        exp_id = self._experiment_id(uri, experiment)
        run = self._recorded_run(record, uri, exp_id, tags) or self._tagged_run(exp_id, tags)
        if run is None:
            run = self._client.create_run(exp_id, run_name=run_name, tags=tags)
            self.created = True
        else:
            self._update_tags(run, tags)
        self.run_id = run.info.run_id
        if record is not None:
            atomic_write_json(record, {"run_id": self.run_id, "experiment_id": exp_id, "experiment": experiment,
                                       "tracking_uri": uri})

    def _experiment_id(self, uri: str, name: str) -> str:
        from mlflow.exceptions import MlflowException

        exp = self._client.get_experiment_by_name(name)
        if exp is not None:
            for key, value in EXPERIMENT_KIND.items():  # a store made before the kind; a kind set by hand stays
                if key not in exp.tags:
                    self._client.set_experiment_tag(exp.experiment_id, key, value)
            return exp.experiment_id
        # Artifacts of a SQLite store live beside it (results/mlartifacts), not in the cwd's ./mlruns.
        location = None
        if uri.startswith("sqlite:///"):
            location = (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts" / name).resolve().as_uri()
        try:
            return self._client.create_experiment(name, artifact_location=location, tags=EXPERIMENT_KIND)
        except MlflowException:  # another job created it a moment ago (with the kind)
            exp = self._client.get_experiment_by_name(name)
            if exp is None:
                raise
            return exp.experiment_id

    def _recorded_run(self, record: Path | None, uri: str, exp_id: str, tags: dict[str, str]) -> Any:
        from mlflow.exceptions import MlflowException

        if record is None or not record.is_file():
            return None
        try:
            saved = json.loads(record.read_text())
            if saved.get("tracking_uri") != uri:
                return None
            run = self._client.get_run(saved["run_id"])
        except (json.JSONDecodeError, KeyError, MlflowException):
            return None
        if run.info.lifecycle_stage != "active" or run.info.experiment_id != exp_id:
            return None
        return None if self._supersede(run, tags) else run

    def _tagged_run(self, exp_id: str, tags: dict[str, str]) -> Any:
        found = self._client.search_runs([exp_id], filter_string=f"tags.argent_run_id = '{tags['argent_run_id']}'")
        live = [run for run in found if not self._supersede(run, tags)]
        return live[0] if live else None

    def _supersede(self, run: Any, tags: dict[str, str]) -> bool:
        """Delete (soft) a top-level run of this folder trained under another config; True if it was."""
        old, new = run.data.tags.get("config_hash"), tags.get("config_hash")
        if old and new and old != new and "mlflow.parentRunId" not in run.data.tags:
            self._client.delete_run(run.info.run_id)
            log.info("MLflow run %s mirrored an older config of this run folder (%s); deleted", run.info.run_id, old)
            return True
        return False

    def _update_tags(self, run: Any, tags: dict[str, str]) -> None:
        """Refresh the tags of a found run; the commit it was created at stays (a later evaluation or
        re-send does not make it another commit's run)."""
        from mlflow.entities import RunTag

        old = run.data.tags
        changed = [RunTag(k, str(v)) for k, v in tags.items()
                   if old.get(k) != str(v) and not (k in KEEP_TAGS and k in old)]
        if changed:
            self._client.log_batch(run.info.run_id, tags=changed)

    def _safe(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self.enabled:
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - tracking must never stop training or evaluation
            self.enabled = False
            log.warning("MLflow tracking disabled for this job (%s: %s); the run folder stays complete; %s",
                        type(err).__name__, err, self.advice)
            return None

    def set_tags(self, tags: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from mlflow.entities import RunTag

        items = [RunTag(k, str(v)[:8000]) for k, v in tags.items()]
        self._safe(self._client.log_batch, self.run_id, tags=items)

    def log_params(self, params: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from mlflow.entities import Param

        # tracking.tags are tags (they may change); params are write-once in MLflow.
        items = [Param(k, str(v)[:6000]) for k, v in flatten(params).items() if not k.startswith("tracking.tags.")]
        existing = self._safe(lambda: self._client.get_run(self.run_id).data.params) or {}
        items = [p for p in items if p.key not in existing]
        for i in range(0, len(items), 100):
            self._safe(self._client.log_batch, self.run_id, params=items[i : i + 100])

    def log_metrics(self, rows: list[dict[str, Any]]) -> None:
        """rows: metrics.jsonl records ({"step": k, name: value, ...})."""
        if not self.enabled:
            return
        from mlflow.entities import Metric

        metrics = [
            Metric(key, float(value), 0, int(row["step"]))
            for row in rows
            for key, value in row.items()
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
        ]
        for i in range(0, len(metrics), 900):
            self._safe(self._client.log_batch, self.run_id, metrics=metrics[i : i + 900])

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        if self.enabled and path.exists():
            self._safe(self._client.log_artifact, self.run_id, str(path), artifact_path)

    def log_result(self, result: dict[str, Any], path: Path) -> None:
        """One evaluation JSON (``argent evaluate``) onto this run; see ``log_evaluation``."""
        if not self.enabled:
            return
        from mlflow.entities import Metric

        name = str(result.get("benchmark") or path.stem)
        # Step 0 and the JSON's write time: the newest evaluation is the run's value; re-sending
        # the same file logs the same (key, step, time, value), which the store keeps once.
        stamp = int(path.stat().st_mtime * 1000)
        values = {metric_key(EVAL_PREFIX, name, key): float(value)
                  for key, value in flatten(result.get("metrics") or {}, sep="/").items()
                  if isinstance(value, (int, float)) and not isinstance(value, bool)}
        current = self._safe(lambda: self._client.get_run(self.run_id).data.metrics) or {}
        fresh = [Metric(k, v, stamp, 0) for k, v in values.items() if current.get(k) != v]
        for i in range(0, len(fresh), 900):
            self._safe(self._client.log_batch, self.run_id, metrics=fresh[i : i + 900])
        self.set_tags(result_tags(name, result))
        self.log_artifact(path, f"{EVAL_PREFIX}/{name}")
        for figure in (result.get("figures") or {}).values():
            self.log_artifact(Path(figure), f"{EVAL_PREFIX}/{name}")

    def finish(self, status: str = "FINISHED") -> None:
        if self.enabled:
            self._safe(self._client.set_terminated, self.run_id, status)
