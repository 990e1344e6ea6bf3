"""MLflow mirror of a run. The run folder is the truth; tracking is best effort.

Every MLflow call goes through ``Tracker._safe``: the first failure is reported once, tracking is
switched off for the rest of the run, and training goes on. ``argent track --run DIR`` re-sends a
finished run's ``config.yaml`` and ``metrics.jsonl`` later (idempotent: it replaces the MLflow run
that carries the same run id tag).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
from pathlib import Path
from typing import Any, Callable

from argent.io import flatten
from argent.runs import default_tracking_uri, read_metrics, read_run_config  # noqa: F401  (read_metrics: re-exported)

log = logging.getLogger("argent.tracking")

# An unreachable server must not stall training with MLflow's default retry back-off.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).parent).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Tracker:
    """One MLflow run per (variant, size, seed). Never raises."""

    def __init__(self, uri: str, experiment: str, run_name: str, tags: dict[str, str], enabled: bool = True) -> None:
        self.enabled = enabled
        self.run_id: str | None = None
        if not enabled:
            return
        self._safe(self._start, uri, experiment, run_name, tags)

    def _start(self, uri: str, experiment: str, run_name: str, tags: dict[str, str]) -> None:
        import mlflow

        self._client = mlflow.MlflowClient(tracking_uri=uri)
        exp = self._client.get_experiment_by_name(experiment)
        exp_id = exp.experiment_id if exp else self._client.create_experiment(experiment)
        # Re-use the MLflow run of the same run folder (resume, re-send), else create one.
        found = self._client.search_runs([exp_id], filter_string=f"tags.argent_run_id = '{tags['argent_run_id']}'")
        run = found[0] if found else self._client.create_run(exp_id, run_name=run_name, tags=tags)
        self.run_id = run.info.run_id

    def _safe(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self.enabled:
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - tracking must never stop training
            self.enabled = False
            log.warning("MLflow tracking disabled for this run (%s: %s); the run folder stays complete; "
                        "re-send it later with `argent track --run <run dir>`", type(err).__name__, err)
            return None

    def log_params(self, params: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from mlflow.entities import Param

        items = [Param(k, str(v)[:6000]) for k, v in flatten(params).items()]
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

    def log_artifact(self, path: Path) -> None:
        if self.enabled and path.exists():
            self._safe(self._client.log_artifact, self.run_id, str(path))

    def finish(self, status: str = "FINISHED") -> None:
        if self.enabled:
            self._safe(self._client.set_terminated, self.run_id, status)


def run_tags(cfg_dict: dict[str, Any], run_dir: Path, config_hash: str) -> dict[str, str]:
    return {
        "argent_run_id": str(run_dir.resolve()),
        "variant": cfg_dict["variant_name"],
        "size": cfg_dict["size"],
        "seed": str(cfg_dict["seed"]),
        "config_hash": config_hash,
        "dataset_hash": cfg_dict["data"].get("dataset_hash", ""),
        "git_commit": git_commit(),
    }


def resend(run_dir: Path, uri: str | None = None) -> bool:
    """Mirror a run folder into MLflow. Returns whether tracking succeeded."""
    cfg = read_run_config(run_dir)  # a torn or missing config.yaml is an error naming the file
    cfg_dict = cfg.to_dict()
    uri = uri or cfg.tracking.uri or default_tracking_uri(run_dir)
    tracker = Tracker(uri, cfg.tracking.experiment, run_dir.parent.name + "-" + run_dir.name,
                      run_tags(cfg_dict, run_dir, cfg.result_hash()))
    tracker.log_params(cfg_dict)
    tracker.log_metrics(read_metrics(run_dir / "metrics.jsonl"))
    for name in ("config.yaml", "summary.json", "curves.png"):
        tracker.log_artifact(run_dir / name)
    done = (run_dir / "summary.json").exists()
    tracker.finish("FINISHED" if done else "RUNNING")
    return tracker.enabled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="argent track", description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, nargs="+", help="run folder(s)")
    parser.add_argument("--uri", default=None, help="tracking URI (default: the run's config, else sqlite under results/)")
    args = parser.parse_args(argv)
    ok = True
    for run_dir in args.run:
        ok &= resend(run_dir, args.uri)
        print(f"{run_dir}: {'tracked' if ok else 'tracking failed (see warning)'}")
    return 0 if ok else 1
