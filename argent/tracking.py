"""MLflow mirror of a run. The run folder is the truth; tracking is best effort.

Every MLflow call goes through ``Tracker._safe``: the first failure is reported once, tracking is
switched off for the rest of the job, and training (or evaluation) goes on. What lands where:

- a training run: the resolved config as params, ``metrics.jsonl`` as metrics, tags that make the
  UI filterable (variant, size, seed, family, Table 3 group, git commit, config hash; see
  ``run_tags``); its MLflow run id is kept in the run folder (``mlflow_run.json``);
- its evaluations, on the same MLflow run (``log_evaluation``): ``eval/<benchmark>/<metric>``
  metrics, counts and the evaluation-entry hash as tags, the result JSON and its figures as
  artifacts under ``eval/<benchmark>/``; re-evaluating replaces the values, never duplicates;
- the tables and figures of a workflow invocation: one ``tables`` run (``log_tables_run``).

``argent track --run DIR`` re-sends a run folder (config, metrics, evaluation results) later; it is
idempotent. See docs/mlflow.md for how to compare runs in ``mlflow ui``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import yaml

from argent.config import ConfigError, load_yaml
from argent.io import ArgentError, atomic_write_json, exclusive_lock, flatten
from argent.runs import (MLFLOW_RECORD as RUN_RECORD, default_tracking_uri, eval_dir_of, read_metrics,
                         read_run_config, results_tracking_uri)

log = logging.getLogger("argent.tracking")

# An unreachable server must not stall a job with MLflow's default retry back-off.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

EVAL_PREFIX = "eval"
KEEP_TAGS = ("git_commit",)  # set when a run is created, never overwritten


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).parent).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def metric_key(*parts: str) -> str:
    """An MLflow-legal key: '@' reads as '_at_' (t2i_R@5 -> t2i_R_at_5), other illegal characters as '_'."""
    key = "/".join(parts).replace("@", "_at_")
    return re.sub(r"[^/\w.\- ]", "_", key)


# ---- the tracker ------------------------------------------------------------------------------


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Exclusive lock of a SQLite store (``<db>.lock`` beside it); nothing for other stores."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    with exclusive_lock(db.with_name(db.name + ".lock")):
        yield


class Tracker:
    """One MLflow run per run folder (variant, size, seed). Never raises.

    The run is found again through ``record`` (the run folder's ``mlflow_run.json``: same store,
    run still active), else through the ``argent_run_id`` tag, else created. A run of the same
    folder made under another config hash is superseded: deleted (soft) so that the UI shows what
    the folder holds now. ``created`` says whether this tracker made a new MLflow run.
    """

    def __init__(self, uri: str, experiment: str, run_name: str, tags: dict[str, str], enabled: bool = True,
                 record: Path | None = None) -> None:
        self.enabled = enabled
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
            return exp.experiment_id
        # Artifacts of a SQLite store live beside it (results/mlartifacts), not in the cwd's ./mlruns.
        location = None
        if uri.startswith("sqlite:///"):
            location = (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts" / name).resolve().as_uri()
        try:
            return self._client.create_experiment(name, artifact_location=location)
        except MlflowException:  # another job created it a moment ago
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
            log.warning("MLflow tracking disabled for this job (%s: %s); the run folder stays complete; "
                        "re-send it later with `argent track --run <run dir>`", type(err).__name__, err)
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


# ---- tags ---------------------------------------------------------------------------------------


def variant_tags(variants_file: str | Path, variant: str) -> dict[str, str]:
    """The ``tags:`` of a catalogue entry, inherited along its ``extends:`` chain (the entry wins).

    In config/variants.yaml each family entry says ``tags: {family: ..., group: ...}`` and an
    ablation overrides ``group`` (3a, 3b, 3c, negatives). ``tags`` is not a training field: the
    catalogue loader drops it, so it never reaches a run's config hash. {} for an unknown variant.
    """
    raw = load_yaml(variants_file)
    chain: list[dict[str, Any]] = []
    name: Any = variant
    while isinstance(name, str) and name in raw and len(chain) <= len(raw):
        entry = raw[name] or {}
        chain.append(entry.get("tags") or {})
        name = entry.get("extends")
    out: dict[str, str] = {}
    for tags in reversed(chain):
        out.update({str(k): str(v) for k, v in tags.items()})
    return out


def catalogue_tags(workflow_config: str | Path, variant: str) -> dict[str, str]:
    """``variant_tags`` of ``variant`` in the catalogue the workflow config names (cwd-relative, as
    ``argent.config.load_experiment`` reads it), plus ``base_variant``. Never raises: {} on failure."""
    try:
        path = Path(load_yaml(workflow_config).get("variants_file", "config/variants.yaml"))
        return {**variant_tags(path, variant), "base_variant": variant}
    except (ConfigError, OSError, AttributeError) as err:
        log.warning("no catalogue tags for %s (%s)", variant, err)
        return {}


def run_tags(cfg_dict: dict[str, Any], run_dir: Path, config_hash: str) -> dict[str, str]:
    """Tags of a training run. ``tracking.tags`` (set by ``argent train`` from the catalogue, never
    hashed) come first; the run's own identity cannot be overridden by them."""
    extra = {str(k): str(v) for k, v in ((cfg_dict.get("tracking") or {}).get("tags") or {}).items()}
    return {
        **extra,
        "argent_run_id": str(run_dir.resolve()),
        "variant": cfg_dict["variant_name"],
        "size": cfg_dict["size"],
        "seed": str(cfg_dict["seed"]),
        "config_hash": config_hash,
        "dataset_hash": cfg_dict["data"].get("dataset_hash", ""),
        "git_commit": git_commit(),
    }


def result_tags(name: str, result: dict[str, Any]) -> dict[str, str]:
    """Counts, status and hashes of one evaluation, as tags (they change when it is re-run)."""
    counts = result.get("counts") or {}
    skipped = counts.get("skipped") or {}
    tags = {"status": result.get("status", ""), "protocol": result.get("protocol", ""),
            "entry_hash": result.get("entry_hash", ""), "config_hash": result.get("config_hash", ""),
            "skipped": sum(v for v in skipped.values() if isinstance(v, int)) if isinstance(skipped, dict) else skipped,
            "skipped_by_reason": json.dumps(skipped, sort_keys=True)}
    tags.update({k: v for k, v in counts.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return {metric_key(EVAL_PREFIX, name, k): str(v) for k, v in tags.items()}


# ---- a run folder, its evaluations, the tables -------------------------------------------------------


def open_run(run_dir: Path, uri: str | None = None, force: bool = False) -> Tracker:
    """The Tracker of a finished or running run folder (disabled when its config says so, unless ``force``)."""
    cfg = read_run_config(run_dir)  # a torn or missing config.yaml is an error naming the file
    cfg_dict = cfg.to_dict()
    uri = uri or cfg.tracking.uri or default_tracking_uri(run_dir)
    return Tracker(uri, cfg.tracking.experiment, f"{cfg.variant_name}-{cfg.size}-seed{cfg.seed}",
                   run_tags(cfg_dict, run_dir, cfg.result_hash()), enabled=force or cfg.tracking.enabled,
                   record=run_dir / RUN_RECORD)


def mirror_training(tracker: Tracker, run_dir: Path) -> None:
    tracker.log_params(read_run_config(run_dir).to_dict())
    tracker.log_metrics(read_metrics(run_dir / "metrics.jsonl"))
    for name in ("config.yaml", "summary.json", "curves.png"):
        tracker.log_artifact(run_dir / name)
    tracker.finish("FINISHED" if (run_dir / "summary.json").exists() else "RUNNING")


def log_results(tracker: Tracker, files: Iterable[Path]) -> None:
    for path in sorted(files):
        try:
            result = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            log.warning("%s: not sent to MLflow (%s)", path, err)
            continue
        tracker.log_result(result, path)


def log_evaluation(run_dir: str | Path, files: Iterable[str | Path] | None = None, uri: str | None = None) -> bool:
    """Put evaluation results (``argent evaluate`` JSON; default: all of the run's) on the training
    run's MLflow run. A run never mirrored before (store down while training) is sent whole first.
    Best effort: returns whether tracking worked, never raises for a tracking failure."""
    run_dir = Path(run_dir)
    try:
        tracker = open_run(run_dir, uri)
    except (OSError, ArgentError, yaml.YAMLError, ConfigError) as err:
        log.warning("evaluation of %s not sent to MLflow (%s)", run_dir, err)
        return False
    if tracker.created:
        mirror_training(tracker, run_dir)
    paths = [Path(f) for f in files] if files is not None else list(eval_dir_of(run_dir).glob("*.json"))
    log_results(tracker, paths)
    return tracker.enabled


def workflow_hash(cfg: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()[:16]


def log_tables_run(tables_dir: Path, figures_dir: Path | None, workflow_cfg: dict[str, Any], results_dir: Path,
                   extra_files: Iterable[Path] = ()) -> bool:
    """One ``tables`` run per workflow invocation (same config and commit: the same run, refreshed):
    every file of ``tables_dir``, the per-run figures and ``extra_files`` (e.g. the training-curve
    figure) as artifacts; tagged kind=tables, git commit, workflow config hash. Never raises."""
    tracking = workflow_cfg.get("tracking") or {}
    if not tracking.get("enabled", True):
        return False
    config_hash, commit = workflow_hash(workflow_cfg), git_commit()
    uri = tracking.get("uri") or results_tracking_uri(results_dir)
    tags = {"argent_run_id": f"tables:{results_dir.resolve()}:{config_hash}:{commit}", "kind": "tables",
            "git_commit": commit, "config_hash": config_hash}
    tracker = Tracker(uri, tracking.get("experiment", "argent"), f"tables-{time.strftime('%Y%m%d-%H%M%S')}", tags)
    for path in sorted(p for p in tables_dir.iterdir() if p.is_file() and not p.name.startswith(".")):
        tracker.log_artifact(path, "tables")
    if figures_dir is not None and figures_dir.is_dir():
        for path in sorted(figures_dir.glob("*.png")):
            tracker.log_artifact(path, "figures/runs")
    for path in extra_files:
        tracker.log_artifact(Path(path), "figures")
    tracker.finish()
    return tracker.enabled


def resend(run_dir: Path, uri: str | None = None) -> bool:
    """Mirror a run folder and its evaluation results into MLflow. Returns whether tracking succeeded."""
    tracker = open_run(run_dir, uri, force=True)
    mirror_training(tracker, run_dir)
    log_results(tracker, eval_dir_of(run_dir).glob("*.json"))
    return tracker.enabled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="argent track", description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, nargs="+", help="run folder(s)")
    parser.add_argument("--uri", default=None, help="tracking URI (default: the run's config, else sqlite under results/)")
    args = parser.parse_args(argv)
    ok = True
    for run_dir in args.run:
        sent = resend(run_dir, args.uri)
        ok &= sent
        evals = eval_dir_of(run_dir)
        print(f"{run_dir}: {'tracked' if sent else 'tracking failed (see warning)'}"
              f" (evaluation results from {evals}: {len(list(evals.glob('*.json')))})")
    return 0 if ok else 1
