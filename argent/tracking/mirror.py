"""What gets logged: a run folder, its evaluation results and a workflow's tables, sent to MLflow.

- a training run: the resolved config as params, ``metrics.jsonl`` as metrics, tags that make the
  UI filterable (``argent.tracking.tags.run_tags``), ``config.yaml``/``summary.json``/``curves.png``
  as artifacts (``mirror_training``);
- its evaluations, on the same MLflow run (``log_evaluation``): ``eval/<benchmark>/<metric>``
  metrics, counts and the evaluation-entry hash as tags, the result JSON and its figures as
  artifacts under ``eval/<benchmark>/``; re-evaluating replaces the values, never duplicates;
- the tables and figures of a workflow invocation: one ``tables`` run (``log_tables_run``);
- a pretrained model's evaluations (``argent evaluate --pretrained``): one ``pretrained`` run per model
  name and checkpoint hash (``log_pretrained``);
- ``resend``: all of a run folder again (``argent track``); idempotent.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterable

import yaml

from argent.config import ConfigError
from argent.io import ArgentError
from argent.runs import MLFLOW_RECORD as RUN_RECORD
from argent.runs import (
    RunFolder,
    default_tracking_uri,
    eval_dir_of,
    read_metrics,
    read_run_config,
    results_tracking_uri,
)
from argent.runs.identity import stable_hash
from argent.tracking.tags import git_commit, run_tags
from argent.tracking.tracker import RESEND_LATER, Tracker

__all__ = ["RUN_RECORD", "log_evaluation", "log_pretrained", "log_results", "log_tables_run", "mirror_training", "open_run",
           "resend", "workflow_hash"]

log = logging.getLogger("argent.tracking")


def open_run(run_dir: Path, uri: str | None = None, force: bool = False) -> Tracker:
    """The Tracker of a finished or running run folder (disabled when its config says so, unless ``force``:
    the re-send of ``argent track``, whose advice on a failing store is to bring it up, not to re-send later)."""
    cfg = read_run_config(run_dir)  # a torn or missing config.yaml is an error naming the file
    cfg_dict = cfg.to_dict()
    uri = uri or cfg.tracking.uri or default_tracking_uri(run_dir)
    advice = (f"check that the MLflow store {uri} is reachable (or pass --uri), then run `argent track` again"
              if force else RESEND_LATER)
    return Tracker(uri, cfg.tracking.experiment, f"{cfg.variant_name}-{cfg.size}-seed{cfg.seed}",
                   run_tags(cfg_dict, run_dir, cfg.result_hash()), enabled=force or cfg.tracking.enabled,
                   record=run_dir / RUN_RECORD, advice=advice)


def mirror_training(tracker: Tracker, run_dir: Path) -> None:
    tracker.log_params(read_run_config(run_dir).to_dict())
    files = RunFolder(run_dir)
    tracker.log_metrics(read_metrics(files.metrics))
    for path in (files.config, files.summary, files.curves):
        tracker.log_artifact(path)
    tracker.finish("FINISHED" if files.summary.exists() else "RUNNING")


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
    return stable_hash(cfg)


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


def log_pretrained(files: Iterable[Path], head: dict[str, Any], workflow_cfg: dict[str, Any], results_dir: Path) -> bool:
    """A pretrained model's evaluation JSON on its own MLflow run (kind=pretrained; the same name and file hash:
    the same run, refreshed), tagged like a training run so the UI lists it beside them. Never raises."""
    tracking = workflow_cfg.get("tracking") or {}
    if not tracking.get("enabled", True):
        return False
    source = head.get("pretrained") or {}
    name = f"{head['variant']}-{head['size']}"
    tags = {"argent_run_id": f"pretrained:{name}:{head['config_hash']}", "kind": "pretrained", "variant": head["variant"],
            "size": head["size"], "seed": str(head["seed"]), "config_hash": head["config_hash"],
            "layout": str(source.get("layout", "")), "arch": str(source.get("arch", "")), "git_commit": git_commit()}
    uri = tracking.get("uri") or results_tracking_uri(results_dir)
    tracker = Tracker(uri, tracking.get("experiment", "argent"), f"{name}-pretrained", tags)
    tracker.log_params({"pretrained": source})
    log_results(tracker, files)
    tracker.finish()
    return tracker.enabled


def resend(run_dir: Path, uri: str | None = None) -> bool:
    """Mirror a run folder and its evaluation results into MLflow. Returns whether tracking succeeded."""
    tracker = open_run(run_dir, uri, force=True)
    mirror_training(tracker, run_dir)
    log_results(tracker, eval_dir_of(run_dir).glob("*.json"))
    return tracker.enabled
