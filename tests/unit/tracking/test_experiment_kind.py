"""The experiment argent creates (or finds) is marked as model training (MLflow 3's
``mlflow.experimentKind``), so `mlflow ui` opens it on the runs table, not the GenAI overview."""

from __future__ import annotations

from pathlib import Path

import pytest

from argent.tracking import EXPERIMENT_KIND, Tracker

mlflow = pytest.importorskip("mlflow")
KIND = "mlflow.experimentKind"


def open_tracker(uri: str, experiment: str = "argent") -> Tracker:
    tracker = Tracker(uri, experiment, "clip-tiny-seed0", {"argent_run_id": "/r/clip-tiny/seed0"})
    assert tracker.run_id is not None  # the store worked (a Tracker never raises)
    return tracker


def test_a_new_experiment_is_a_model_training_experiment(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    open_tracker(uri)
    exp = mlflow.MlflowClient(tracking_uri=uri).get_experiment_by_name("argent")
    assert exp.tags[KIND] == EXPERIMENT_KIND[KIND] == "custom_model_development"


def test_an_older_experiment_gets_the_kind_and_a_kind_set_by_hand_stays(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    old = client.create_experiment("old")  # as argent made it before the kind
    mine = client.create_experiment("mine", tags={KIND: "genai_development"})
    open_tracker(uri, "old")
    open_tracker(uri, "mine")
    assert client.get_experiment(old).tags[KIND] == "custom_model_development"
    assert client.get_experiment(mine).tags[KIND] == "genai_development"
