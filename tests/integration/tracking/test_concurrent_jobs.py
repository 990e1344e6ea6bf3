"""Several workflow jobs opening one fresh MLflow store at once (real processes) each get their run."""

import os
import subprocess
import sys

import pytest

from tests.fixtures import ROOT

mlflow = pytest.importorskip("mlflow")


def runs_of(client, experiment: str):
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id]) if exp else []


def test_jobs_opening_a_fresh_store_at_once_all_track(tmp_path):
    """The workflow starts several jobs together; each must get its run, none may lose tracking."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = ("import sys; from argent.tracking import Tracker; "
            "t = Tracker(sys.argv[1], 'race', sys.argv[2], {'argent_run_id': sys.argv[2]}); "
            "sys.exit(0 if t.enabled and t.run_id else 3)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code, uri, f"job{i}"], env=env, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    assert len(runs_of(mlflow.MlflowClient(tracking_uri=uri), "race")) == 3
